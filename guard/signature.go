package guard

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"

	"github.com/fenceview/fenceview/guard/ledger"
	"github.com/fenceview/fenceview/internal/ed25519batch"
)

// ReasonBadSignature: a guard in signed mode was shown a token without a
// signature, or with one that no trusted key made for this resource and
// token. The token is never compared, so a forged number cannot raise a mark.
const ReasonBadSignature = ledger.ReasonBadSignature

// Sizes of the signed-token format (contract v2, "Signed tokens").
const (
	SignatureSize     = ledger.SignatureSize // raw bytes
	PublicKeySize     = ledger.PublicKeySize // raw bytes
	SignatureTextSize = 86                   // base64url without padding of 64 bytes
	PublicKeyTextSize = 43                   // base64url without padding of 32 bytes
)

// Errors for signatures and keys that are not well formed. A well-formed
// signature that does not verify is not an error: it is a refusal with
// ReasonBadSignature.
var (
	ErrInvalidSignature = errors.New("invalid token signature")
	ErrInvalidPublicKey = ledger.ErrInvalidPublicKey
)

// AppendMessage appends the bytes an issuer signs for token on resourceID:
// the UTF-8 of "fenceview/v1 <resourceId> <token>", one space each, the
// token in decimal. Binding the resource stops a signature of resource A
// from passing for B; binding the token stops one of 5 from passing for 6.
func AppendMessage(dst []byte, resourceID string, token int64) []byte {
	return ledger.AppendMessage(dst, resourceID, token)
}

// Message returns the bytes an issuer signs for token on resourceID (see
// AppendMessage).
func Message(resourceID string, token int64) []byte {
	return AppendMessage(make([]byte, 0, len(ledger.MessagePrefix)+len(resourceID)+21), resourceID, token)
}

// Sign returns the signature text of token on resourceID under key: what an
// issuer puts in a grant. Invalid ids and tokens are errors, so nothing
// unverifiable is ever signed.
func Sign(key ed25519.PrivateKey, resourceID string, token int64) (string, error) {
	if err := ValidateResourceID(resourceID); err != nil {
		return "", err
	}
	if err := ValidateToken(token); err != nil {
		return "", err
	}
	if len(key) != ed25519.PrivateKeySize {
		return "", errors.New("guard: signing key is not an Ed25519 private key")
	}
	var buf [256]byte
	return EncodeSignature(ed25519.Sign(key, AppendMessage(buf[:0], resourceID, token))), nil
}

// SignAll returns the signature texts of tokens[i] on resourceIDs[i] under
// key, each what Sign returns, for less CPU than signing them one by one
// (see internal/ed25519batch). An invalid id or token fails the whole call.
func SignAll(key ed25519.PrivateKey, resourceIDs []string, tokens []int64) ([]string, error) {
	if len(resourceIDs) != len(tokens) {
		return nil, errors.New("guard: as many tokens as resource ids are needed")
	}
	messages := make([][]byte, len(tokens))
	for i, id := range resourceIDs {
		if err := ValidateResourceID(id); err != nil {
			return nil, err
		}
		if err := ValidateToken(tokens[i]); err != nil {
			return nil, err
		}
		messages[i] = AppendMessage(nil, id, tokens[i])
	}
	raw, err := ed25519batch.Sign(key, messages, make([][]byte, 0, len(messages)))
	if err != nil {
		return nil, err
	}
	sigs := make([]string, len(raw))
	for i, r := range raw {
		sigs[i] = EncodeSignature(r)
	}
	return sigs, nil
}

// b64 is the one encoding of signatures and keys: base64url, no padding,
// and Strict so that unused trailing bits must be zero (one text per value).
var b64 = base64.RawURLEncoding.Strict()

// EncodeSignature returns the text form of a raw signature.
func EncodeSignature(sig []byte) string { return b64.EncodeToString(sig) }

// EncodePublicKey returns the text form of a raw public key.
func EncodePublicKey(key []byte) string { return b64.EncodeToString(key) }

// DecodeSignature parses the text form of a signature: exactly 86 characters
// of the base64url alphabet, no padding, the canonical encoding of 64 bytes.
// Anything else (padding, line breaks, spaces, the standard alphabet, another
// length, non-zero trailing bits) is ErrInvalidSignature.
func DecodeSignature(s string) ([SignatureSize]byte, error) {
	var sig [SignatureSize]byte
	if !decodeExact(sig[:], s, SignatureTextSize) {
		return sig, ErrInvalidSignature
	}
	return sig, nil
}

// DecodePublicKey parses the text form of a public key (43 characters,
// canonical base64url of 32 bytes), as /v1/signing-keys publishes it.
func DecodePublicKey(s string) (ed25519.PublicKey, error) {
	key := make([]byte, PublicKeySize)
	if !decodeExact(key, s, PublicKeyTextSize) {
		return nil, ErrInvalidPublicKey
	}
	return key, nil
}

// decodeExact decodes s into dst only if s is exactly the canonical text of
// len(dst) bytes. The alphabet is checked here because the base64 package
// skips '\r' and '\n' even in strict mode.
func decodeExact(dst []byte, s string, textLen int) bool {
	if len(s) != textLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isB64URL(s[i]) {
			return false
		}
	}
	var src [SignatureTextSize]byte // no allocation on the hot path
	n, err := b64.Decode(dst, src[:copy(src[:], s)])
	return err == nil && n == len(dst)
}

func isB64URL(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}
