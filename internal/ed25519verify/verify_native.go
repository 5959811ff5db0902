//go:build !wasm

package ed25519verify

import "crypto/ed25519"

func (k *PublicKey) prepare() {}

// Verify reports whether sig is a valid signature of message by k. Like
// crypto/ed25519.Verify, it returns false for a signature of the wrong
// length.
func (k *PublicKey) Verify(message, sig []byte) bool {
	return ed25519.Verify(k.key[:], message, sig)
}
