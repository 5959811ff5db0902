package sha256

import (
	"bytes"
	std "crypto/sha256"
	"math/rand/v2"
	"testing"
)

// The generic SHA-256 (the WebAssembly guard's) is crypto/sha256 on every
// length around the block and padding boundaries, and on random input.
func TestGenericSHA256(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 300; n++ {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if got, want := Sum256(b), std.Sum256(b); got != want {
			t.Fatalf("%d bytes: %x, want %x", n, got, want)
		}
	}
	// Written in pieces, across blocks.
	var d digest
	d.reset()
	data := bytes.Repeat([]byte("fenceview"), 100)
	for i := 0; i < len(data); i += 7 {
		d.write(data[i:min(i+7, len(data))])
	}
	if got, want := d.sum(), std.Sum256(data); got != want {
		t.Fatalf("in pieces: %x, want %x", got, want)
	}
}
