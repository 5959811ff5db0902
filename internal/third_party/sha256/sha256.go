// Copyright 2009 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Package sha256 is SHA-256 (FIPS 180-4) as Go's crypto/sha256 computes it
// without the CPU's instructions: its digest and generic block function,
// without the hash.Hash interface. crypto/sha256 itself cannot be imported
// by the WebAssembly guard, because its FIPS 140 module's initialisation
// alone adds about 450 KB to the module (measured: 1,818,863 -> 2,266,476
// bytes); native builds use crypto/sha256.
package sha256

import "encoding/binary"

// chunk is SHA-256's block size.
const chunk = 64

// digest is a SHA-256 computation.
type digest struct {
	h   [8]uint32
	x   [chunk]byte
	nx  int
	len uint64
}

func (d *digest) reset() {
	d.h = [8]uint32{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19}
	d.nx, d.len = 0, 0
}

func (d *digest) write(p []byte) {
	d.len += uint64(len(p))
	if d.nx > 0 {
		n := copy(d.x[d.nx:], p)
		d.nx += n
		if d.nx == chunk {
			block(d, d.x[:])
			d.nx = 0
		}
		p = p[n:]
	}
	if len(p) >= chunk {
		n := len(p) &^ (chunk - 1)
		block(d, p[:n])
		p = p[n:]
	}
	if len(p) > 0 {
		d.nx = copy(d.x[:], p)
	}
}

func (d *digest) sum() [32]byte {
	n := d.len
	// Padding: 0x80, zeros up to 56 mod 64, then the length in bits.
	var tmp [chunk + 8]byte
	tmp[0] = 0x80
	var t uint64
	if n%chunk < 56 {
		t = 56 - n%chunk
	} else {
		t = chunk + 56 - n%chunk
	}
	binary.BigEndian.PutUint64(tmp[t:], n<<3)
	d.write(tmp[:t+8])
	var out [32]byte
	for i, v := range d.h {
		binary.BigEndian.PutUint32(out[4*i:], v)
	}
	return out
}

// Sum256 is SHA-256 of b.
func Sum256(b []byte) [32]byte {
	var d digest
	d.reset()
	d.write(b)
	return d.sum()
}
