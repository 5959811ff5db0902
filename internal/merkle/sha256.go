package merkle

import "encoding/binary"

// chunk is SHA-256's block size.
const chunk = 64

// digest is a SHA-256 computation (FIPS 180-4), as Go's crypto/sha256 does
// it, without the hash.Hash interface nothing here needs. The WebAssembly
// guard hashes with it; native builds use crypto/sha256 (hash_native.go),
// and the tests compare the two.
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

func (d *digest) sum() [HashSize]byte {
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
	var out [HashSize]byte
	for i, v := range d.h {
		binary.BigEndian.PutUint32(out[4*i:], v)
	}
	return out
}

// sum256Generic is SHA-256 of b by the code above.
func sum256Generic(b []byte) [HashSize]byte {
	var d digest
	d.reset()
	d.write(b)
	return d.sum()
}
