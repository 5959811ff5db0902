package guard

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/fenceview/fenceview/guard/ledger"
)

// Bounds on identifiers: fenceview's schema stores resources as
// VARCHAR(160) and holders as VARCHAR(80).
const (
	MaxResourceIDLen = ledger.MaxResourceIDLen
	MaxHolderIDLen   = 80
)

// Errors for invalid input. Every entry point (Go API, HTTP, WebAssembly)
// validates with the functions below, so they all refuse the same inputs.
// Match them with errors.Is.
var (
	ErrInvalidResourceID = ledger.ErrInvalidResourceID
	ErrInvalidHolderID   = errors.New("invalid holder id")
	ErrInvalidToken      = ledger.ErrInvalidToken
)

// Token is the envelope a fencing token travels in. A token is only
// comparable with tokens of the same issuer and scope.
//
// Signature is the issuer's Ed25519 signature carrier of the grant's
// message (Message, or SharedMessage for a shared grant), as text
// (base64url, no padding), and KeyID names the key that made it; both are
// empty for tokens of an issuer that does not sign. Shared marks the token
// of a shared grant (a read phase's, held by all its readers): it may
// read, never write. Only the signature proves it: the field is what the
// issuer said, and a token without a signature can claim anything.
type Token struct {
	Token     int64     `json:"token"`
	Issuer    string    `json:"issuer"`
	Scope     string    `json:"scope"`
	IssuedAt  time.Time `json:"issuedAt"`
	KeyID     string    `json:"keyId,omitempty"`
	Signature string    `json:"signature,omitempty"`
	Shared    bool      `json:"shared,omitempty"`
}

// Scope returns the scope of tokens issued for resourceID.
func Scope(resourceID string) string { return "resource:" + resourceID }

// IdempotencyKey is the key for calls to resources that cannot check a
// token themselves: one key per resource and grant.
func IdempotencyKey(resourceID string, token int64) string {
	return resourceID + ":" + strconv.FormatInt(token, 10)
}

// Mismatch reports why t may not be compared with tokens that issuer issued
// for resourceID: ReasonForeignIssuer, ReasonScopeMismatch, or "" when it may.
// Empty fields of t, and an empty issuer, are not checked.
func (t Token) Mismatch(issuer, resourceID string) string {
	if t.Issuer != "" && issuer != "" && t.Issuer != issuer {
		return ReasonForeignIssuer
	}
	if t.Scope != "" && t.Scope != Scope(resourceID) {
		return ReasonScopeMismatch
	}
	return ""
}

// ValidateResourceID accepts 1..160 bytes of UTF-8 without control characters.
func ValidateResourceID(id string) error { return ledger.ValidateResourceID(id) }

// ValidateHolderID accepts 1..80 bytes of UTF-8 without control characters.
func ValidateHolderID(id string) error {
	return ledger.ValidateID(ErrInvalidHolderID, id, MaxHolderIDLen)
}

// ValidateToken accepts tokens 1 .. 2^63-1; 0 means "no token".
func ValidateToken(token int64) error { return ledger.ValidateToken(token) }

// ParseToken parses a token as it travels in text (the X-Fencing-Token
// header): a positive decimal integer, digits only, no sign, no spaces.
func ParseToken(s string) (int64, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: empty", ErrInvalidToken)
	}
	if len(s) > 19 {
		return 0, fmt.Errorf("%w: %q is out of range", ErrInvalidToken, truncate(s))
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%w: %q is not a positive decimal integer", ErrInvalidToken, truncate(s))
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is out of range", ErrInvalidToken, s)
	}
	if err := ValidateToken(n); err != nil {
		return 0, err
	}
	return n, nil
}

func truncate(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}
