// Copyright 2009 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Package sha512 is SHA-512 (FIPS 180-4) as Go's crypto/sha512 computes it
// without the CPU's instructions: its digest and generic block function,
// without the hash.Hash interface. crypto/sha512 itself cannot be imported
// by the WebAssembly guard, because its FIPS 140 module's initialisation
// alone adds about 570 KB to the module; native builds use crypto/sha512.
package sha512

import "encoding/binary"

// chunk is SHA-512's block size.
const chunk = 128

// digest is a SHA-512 computation.
type digest struct {
	h   [8]uint64
	x   [chunk]byte
	nx  int
	len uint64
}

func (d *digest) reset() {
	d.h = [8]uint64{
		0x6a09e667f3bcc908, 0xbb67ae8584caa73b, 0x3c6ef372fe94f82b, 0xa54ff53a5f1d36f1,
		0x510e527fade682d1, 0x9b05688c2b3e6c1f, 0x1f83d9abfb41bd6b, 0x5be0cd19137e2179,
	}
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

// sum pads and finishes the computation; d must not be written after.
func (d *digest) sum() [64]byte {
	n := d.len
	var tmp [chunk + 16]byte // padding + length
	tmp[0] = 0x80
	var t uint64
	if n%chunk < 112 {
		t = 112 - n%chunk
	} else {
		t = chunk + 112 - n%chunk
	}
	binary.BigEndian.PutUint64(tmp[t+8:], n<<3) // the upper 64 bits of the length stay 0
	d.write(tmp[:t+16])
	var out [64]byte
	for i, v := range d.h {
		binary.BigEndian.PutUint64(out[8*i:], v)
	}
	return out
}

// Sum512 is SHA-512 of the concatenation of parts.
func Sum512(parts ...[]byte) [64]byte {
	var d digest
	d.reset()
	for _, p := range parts {
		d.write(p)
	}
	return d.sum()
}
