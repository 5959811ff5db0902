package guard

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"math"

	"github.com/fenceview/fenceview/guard/ledger"
	"github.com/fenceview/fenceview/internal/merkle"
)

// ReasonBadSignature: a guard in signed mode was shown a token without a
// signature, or with one that no trusted key made for this resource and
// token. The token is never compared, so a forged number cannot raise a mark.
const ReasonBadSignature = ledger.ReasonBadSignature

// Sizes of the signed-token format (docs/signed-tokens.md).
const (
	SignatureSize     = ledger.SignatureSize // raw bytes of a signature of one token
	PublicKeySize     = ledger.PublicKeySize // raw bytes
	SignatureTextSize = 86                   // base64url without padding of 64 bytes
	PublicKeyTextSize = 43                   // base64url without padding of 32 bytes
	// MaxCarrierSize and MaxCarrierTextSize bound a signature carrier,
	// raw and as text: a batch carrier with the longest audit path (32
	// hashes) is 1,097 bytes, 1,463 characters.
	MaxCarrierSize     = ledger.MaxCarrierSize
	MaxCarrierTextSize = (MaxCarrierSize*8 + 5) / 6
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

// AppendGrantMessage appends the message of a grant in its mode: a shared
// grant's is "fenceview/v1 <resourceId> <token> shared", so that a
// reader's token never verifies as a writer's.
func AppendGrantMessage(dst []byte, resourceID string, token int64, shared bool) []byte {
	return ledger.AppendGrantMessage(dst, resourceID, token, shared)
}

// SharedMessage returns the bytes an issuer signs for a shared grant of
// token on resourceID.
func SharedMessage(resourceID string, token int64) []byte {
	return AppendGrantMessage(nil, resourceID, token, true)
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

// SignBatch signs tokens[i] on resourceIDs[i] as one batch of exclusive
// grants: one Ed25519 signature by key over the batch's size and the root
// of a Merkle tree of the grants' messages (RFC 9162 §2.1), and for each
// grant the text of its batch carrier (the signature, its index, the
// batch's size and its audit path). What a group
// commit's grants take: a batch of n costs one signature and about 2n
// SHA-256 hashes. A batch of one is a batch carrier too. An invalid id or
// token fails the whole call.
//
// The tree is merkle.Tree: every node hashed once, each path read from
// its levels. The tests check it against golang.org/x/mod/sumdb/tlog, the
// code the go command verifies module checksums with.
func SignBatch(key ed25519.PrivateKey, resourceIDs []string, tokens []int64) ([]string, error) {
	return SignGrants(key, resourceIDs, tokens, nil)
}

// SignGrants is SignBatch for grants of either mode: shared[i] marks a
// shared grant, whose leaf is its shared message (nil: every grant is
// exclusive).
func SignGrants(key ed25519.PrivateKey, resourceIDs []string, tokens []int64, shared []bool) ([]string, error) {
	if len(resourceIDs) != len(tokens) || shared != nil && len(shared) != len(tokens) {
		return nil, errors.New("guard: as many tokens as resource ids (and modes) are needed")
	}
	if len(key) != ed25519.PrivateKeySize {
		return nil, errors.New("guard: signing key is not an Ed25519 private key")
	}
	n := len(tokens)
	if n == 0 || n > math.MaxUint32 {
		return nil, errors.New("guard: a batch has 1 to 2^32-1 grants")
	}
	leaves := make([][merkle.HashSize]byte, n)
	var buf [256]byte
	for i, id := range resourceIDs {
		if err := ValidateResourceID(id); err != nil {
			return nil, err
		}
		if err := ValidateToken(tokens[i]); err != nil {
			return nil, err
		}
		leaves[i] = merkle.LeafHash(AppendGrantMessage(buf[:0], id, tokens[i], shared != nil && shared[i]))
	}
	tree := merkle.NewTree(leaves)
	root := tree.Root()
	var msg [merkle.MaxRootMessageSize]byte
	sig := ed25519.Sign(key, merkle.AppendRootMessage(msg[:0], uint32(n), &root))
	out := make([]string, n)
	var pathBuf [merkle.MaxPath][merkle.HashSize]byte
	carrier := make([]byte, 0, merkle.MaxCarrierSize)
	text := make([]byte, 0, b64.EncodedLen(merkle.MaxCarrierSize))
	for i := range out {
		path := tree.AppendPath(pathBuf[:0], i)
		carrier = merkle.AppendCarrier(carrier[:0], sig, uint32(i), uint32(n), path)
		text = b64.AppendEncode(text[:0], carrier)
		out[i] = string(text)
	}
	return out, nil
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

// DecodeCarrier parses the text form of a signature carrier: the canonical
// base64url text (no padding) of 64 bytes (a signature of the token's own
// message) or of a batch carrier (SignBatch), at most MaxCarrierTextSize
// characters. It returns the raw bytes; anything else is
// ErrInvalidSignature. Whether a batch carrier's path fits its index and
// size is for the verification to find out.
func DecodeCarrier(s string) ([]byte, error) {
	n := len(s) * 6 / 8
	if len(s) > MaxCarrierTextSize || !ledger.IsCarrierSize(n) {
		return nil, ErrInvalidSignature
	}
	raw := make([]byte, n)
	if !decodeExact(raw, s, b64.EncodedLen(n)) {
		return nil, ErrInvalidSignature
	}
	return raw, nil
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
	var src [MaxCarrierTextSize]byte // no allocation on the hot path
	n, err := b64.Decode(dst, src[:copy(src[:], s)])
	return err == nil && n == len(dst)
}

func isB64URL(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}
