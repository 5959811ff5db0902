// Package ed25519verify verifies Ed25519 signatures (RFC 8032, pure
// Ed25519) with exactly the decisions of Go's crypto/ed25519.Verify, for
// the guards, native and WebAssembly.
//
// Natively, a PublicKey verifies with crypto/ed25519. In the WebAssembly
// build it runs ref10's arithmetic (internal/third_party/ref10) with Go's
// generic SHA-512 (internal/third_party/sha512), for two reasons:
// importing crypto/ed25519 adds about 690 KB to a Go WebAssembly module
// (the FIPS 140 module's initialisation, not the curve arithmetic), and its
// field arithmetic multiplies 64-bit limbs into 128-bit products, which
// WebAssembly has no instruction for, so Go emulates each with four
// multiplies and a carry chain. ref10's 25.5-bit limbs need only 64-bit
// products: one instruction each. A key also keeps a table of its point's
// multiples (fixedbase.go), which halves the field operations of each
// verification.
//
// The verification steps are those of crypto/ed25519, so the same
// signatures pass and fail: a non-canonical S fails, a public key that is
// not a point fails, a non-canonical encoding of a point's y is reduced as
// crypto/ed25519 reduces it, R is compared as bytes. Tests compare the
// WebAssembly build's verifier with crypto/ed25519 natively, on valid,
// corrupted, malleated, non-canonical and random inputs, RFC 8032's
// vectors and Wycheproof's; TestInWebAssembly runs those tests compiled to
// WebAssembly in wazero and Node, and package wasm's conformance table
// sends malleated signatures through every module and runtime.
package ed25519verify

// Sizes, as crypto/ed25519.
const (
	PublicKeySize = 32
	SignatureSize = 64
)

// PublicKey is an Ed25519 public key ready to verify signatures. In the
// WebAssembly build it carries its point's table (30 KB), made once by
// NewPublicKey.
type PublicKey struct {
	key   [PublicKeySize]byte
	table *fixedBaseTable // -A's multiples; nil when A is not a point (and natively)
}

// NewPublicKey prepares key. A key that is not a curve point is kept: it
// verifies nothing, as in crypto/ed25519.
func NewPublicKey(key *[PublicKeySize]byte) *PublicKey {
	k := &PublicKey{key: *key}
	k.prepare()
	return k
}

// Bytes returns the key's 32 bytes.
func (k *PublicKey) Bytes() [PublicKeySize]byte { return k.key }
