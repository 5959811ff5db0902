//go:build !wasm

package ed25519verify

import "crypto/sha512"

// sum512 is SHA-512 of the concatenation of parts: crypto/sha512, with the
// CPU's instructions where it has them.
func sum512(parts ...[]byte) [64]byte {
	h := sha512.New()
	for _, p := range parts {
		h.Write(p)
	}
	var out [64]byte
	h.Sum(out[:0])
	return out
}
