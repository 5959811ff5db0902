// Package ed25519verify verifies Ed25519 signatures (RFC 8032, pure
// Ed25519) with exactly the decisions of Go's crypto/ed25519.Verify, for the
// WebAssembly guard, which cannot afford crypto/ed25519: importing it adds
// about 690 KB to a Go WebAssembly module (the FIPS 140 module's
// initialisation, not the curve arithmetic).
//
// The curve arithmetic is filippo.io/edwards25519, the standalone form of
// the package crypto/ed25519 itself uses; SHA-512 is Go's generic code. The
// verification steps are crypto/internal/fips140/ed25519's verifyWithDom,
// line by line, so the same signatures pass and fail: a non-canonical S
// fails, a public key that is not a point fails, R is compared as bytes.
// Tests compare the two on valid, corrupted and random inputs.
package ed25519verify

import (
	"bytes"

	"filippo.io/edwards25519"
)

// Sizes, as crypto/ed25519.
const (
	PublicKeySize = 32
	SignatureSize = 64
)

// Verify reports whether sig is a valid signature of message by publicKey.
// Like crypto/ed25519.Verify, it returns false (never panics) for a key or
// signature of the wrong length.
func Verify(publicKey, message, sig []byte) bool {
	if len(publicKey) != PublicKeySize || len(sig) != SignatureSize || sig[63]&224 != 0 {
		return false
	}
	A, err := new(edwards25519.Point).SetBytes(publicKey)
	if err != nil {
		return false
	}
	h := sum512(sig[:32], publicKey, message)
	k, err := edwards25519.NewScalar().SetUniformBytes(h[:])
	if err != nil {
		return false // cannot happen: h is 64 bytes
	}
	S, err := edwards25519.NewScalar().SetCanonicalBytes(sig[32:])
	if err != nil {
		return false
	}
	// [S]B = R + [k]A  -->  [k](-A) + [S]B = R
	minusA := new(edwards25519.Point).Negate(A)
	R := new(edwards25519.Point).VarTimeDoubleScalarBaseMult(k, minusA, S)
	return bytes.Equal(sig[:32], R.Bytes())
}
