//go:build wasm

package ed25519verify

import "github.com/fenceview/fenceview/internal/third_party/sha512"

// sum512 is SHA-512 of the concatenation of parts: the generic code, since
// crypto/sha512 would make the WebAssembly guard about 570 KB larger.
func sum512(parts ...[]byte) [64]byte { return sha512.Sum512(parts...) }
