//go:build wasm

package merkle

import "github.com/fenceview/fenceview/internal/third_party/sha256"

// sum256 is SHA-256 of b: the generic code, since crypto/sha256 would
// make the WebAssembly guard about 450 KB larger.
func sum256(b []byte) [HashSize]byte { return sha256.Sum256(b) }
