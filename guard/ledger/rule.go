// Package ledger is the fencing rule and the ledger of high-water marks:
// the one implementation of the rule that every fenceview guard runs. The
// guard package wraps it in a mutex and its Decision; the WebAssembly guard
// (guard.wasm, guard-extism.wasm) is built from it directly.
//
// It imports no fmt, time, reflect or crypto/... package on purpose: each of
// those adds hundreds of kilobytes of initialisation to a Go WebAssembly
// module (fmt about 390 KB, time 260 KB, crypto/ed25519 690 KB), and the
// module ships inside every plugin. The conformance table in package wasm
// checks the native guard and the modules against each other on the same
// inputs.
//
// A Ledger is not safe for concurrent use: its callers (guard.Guard's
// mutex, a WebAssembly instance, which runs one call at a time) serialise
// access themselves.
package ledger

import (
	"errors"
	"strconv"
	"unicode/utf8"
)

// MaxResourceIDLen bounds resource ids (the VARCHAR(160) of fenceview's
// schema).
const MaxResourceIDLen = 160

// Reasons a token is refused. They are part of fenceview's public contract
// (HTTP bodies, the rejection history, the event stream); package guard
// names them and the reasons that only envelopes have.
const (
	// ReasonStale: the token is below the resource's high-water mark.
	ReasonStale = "stale-token"
	// ReasonBadSignature: a ledger in signed mode was shown a token
	// without a signature, or with one that no trusted key made for this
	// resource and token. The token is never compared, so a forged number
	// cannot raise a mark.
	ReasonBadSignature = "bad-signature"
	// ReasonSharedToken: a write presented the token of a shared grant
	// (a read phase's, which many readers hold at once). A signed guard
	// tells by the signature; the server's fence by its record of grants.
	ReasonSharedToken = "shared-token"
)

// Errors for invalid input. Match with errors.Is.
var (
	ErrInvalidResourceID = errors.New("invalid resource id")
	ErrInvalidToken      = errors.New("invalid fencing token")
	ErrUnknownHandle     = errors.New("unknown resource handle")
	ErrInvalidPublicKey  = errors.New("invalid signing public key")
	ErrTooManyKeys       = errors.New("guard: too many trusted signing keys")
)

// inputError is ErrInvalid... with its detail, as fmt.Errorf("%w: %s")
// would print it, without fmt.
type inputError struct {
	kind   error
	detail string
}

func (e *inputError) Error() string { return e.kind.Error() + ": " + e.detail }
func (e *inputError) Unwrap() error { return e.kind }

// ValidateResourceID accepts 1..160 bytes of UTF-8 without control
// characters (Unicode category Cc).
func ValidateResourceID(id string) error {
	return ValidateID(ErrInvalidResourceID, id, MaxResourceIDLen)
}

// ValidateID accepts 1..max bytes of UTF-8 without control characters; an
// id it refuses is an error that wraps kind. Every identifier fenceview
// stores (resources here, holders in package guard) is checked by it.
func ValidateID(kind error, id string, max int) error {
	var detail string
	switch {
	case len(id) == 0:
		detail = "empty"
	case len(id) > max:
		detail = strconv.Itoa(len(id)) + " bytes, at most " + strconv.Itoa(max) + " allowed"
	case !utf8.ValidString(id):
		detail = "not valid UTF-8"
	default:
		for i, r := range id {
			if isControl(r) {
				detail = "control character at byte " + strconv.Itoa(i)
				break
			}
		}
		if detail == "" {
			return nil
		}
	}
	return &inputError{kind, detail}
}

// isControl is unicode.IsControl: Unicode category Cc is exactly these two
// ranges, and the Unicode stability policy keeps it so. (Package unicode
// costs its tables' initialisation in every WebAssembly module.)
func isControl(r rune) bool { return r <= 0x1f || 0x7f <= r && r <= 0x9f }

// ValidateToken accepts tokens 1 .. 2^63-1; 0 means "no token".
func ValidateToken(token int64) error {
	if token <= 0 {
		return &inputError{ErrInvalidToken, strconv.FormatInt(token, 10) + " is not a positive integer"}
	}
	return nil
}

// Kind returns the Err... value an error of this package wraps (err itself
// for any other error): a switch on it needs no errors.Is.
func Kind(err error) error {
	if e, ok := err.(*inputError); ok {
		return e.kind
	}
	return err
}

func unknownHandle(h Handle) error {
	return &inputError{ErrUnknownHandle, strconv.FormatUint(uint64(h), 10)}
}

// Handle names one resource of a Ledger by a small integer, so a hot path
// need not hash the id on every call. Handles start at 1; 0 names nothing.
// A handle, once given, names its resource for the life of the Ledger, so
// a ledger only grows.
type Handle uint32

// Result is the outcome of presenting a token: Required is the mark the
// token was compared with (for a refusal, the lowest token that would have
// passed); Reason is empty when accepted.
type Result struct {
	Accepted bool
	Reason   string
	Required int64
}

// Evaluate is the rule: accept token >= highWater, refuse token <
// highWater. It is pure; a caller that keeps the mark records an accepted
// token in the same atomic step (as Ledger does, and as the server does
// inside its transaction).
func Evaluate(highWater, token int64) Result {
	if token < highWater {
		return Result{Reason: ReasonStale, Required: highWater}
	}
	return Result{Accepted: true, Required: highWater}
}
