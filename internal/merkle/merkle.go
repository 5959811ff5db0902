// Package merkle is the verifying half of batch signatures: one Ed25519
// signature covers a whole batch of grants through a Merkle tree (RFC 9162
// §2.1, the hashing of Certificate Transparency and of Go's checksum
// database), and each grant carries its inclusion proof. This package
// parses that carrier and recomputes the tree's root from a grant's message
// and its proof; the callers check the signature over the root. Tree is the
// signing half's: the root and every path of a batch, each node hashed once.
//
// It imports nothing heavy, so the WebAssembly guard (through guard/ledger)
// can afford it: SHA-256 is Go's generic code there, crypto/sha256 natively.
// The tests check both halves against independent implementations of RFC
// 9162's MTH and PATH: the RFC's recursive definitions, and
// golang.org/x/mod/sumdb/tlog.
//
// The carrier, decoded from base64url without padding:
//
//	0x02 || signature (64) || index (u32be) || size (u32be) || path (32 bytes each, from the leaf up)
//
// The signature is over "fenceview/batch/v2 <size> <root>": the size is
// signed with the root, because one audit path can lead to the same root
// under several sizes (index 2 of 5 also fits sizes 6, 7 and 8), and a
// token's carrier must be unique. Carriers of version 0x01, whose message
// had no size, are refused. A 64-byte carrier is a signature of the leaf
// message alone (a grant signed by itself); callers tell the two apart by length.
package merkle

import (
	"encoding/binary"
	"strconv"
)

// Sizes of the batch carrier, raw.
const (
	HashSize      = 32
	SignatureSize = 64
	// Version is the carrier's first byte: 0x02, the size signed with
	// the root (0x01 carriers did not sign it and are refused).
	Version = 0x02
	// HeaderSize is the carrier without its path: version, signature,
	// index and size.
	HeaderSize = 1 + SignatureSize + 4 + 4
	// MaxPath is the longest audit path: a tree of at most 2^32-1 leaves
	// is at most 32 levels deep.
	MaxPath = 32
	// MaxCarrierSize bounds a carrier, so every input can be refused by its
	// length before it is read.
	MaxCarrierSize = HeaderSize + MaxPath*HashSize
)

// RootPrefix starts the message a batch's key signs: RootPrefix, the
// batch's size in decimal, a space and the 64 lowercase hex digits of the
// root.
const RootPrefix = "fenceview/batch/v2 "

// MaxRootMessageSize bounds that message: a size has at most 10 digits.
const MaxRootMessageSize = len(RootPrefix) + 10 + 1 + 2*HashSize

// LeafHash is SHA-256(0x00 || message): a leaf can never pose as a node.
func LeafHash(message []byte) [HashSize]byte {
	var buf [256]byte // every grant message fits (13 + 160 + 1 + 19 bytes): no allocation
	if len(message) < len(buf) {
		buf[0] = 0x00
		n := copy(buf[1:], message)
		return sum256(buf[:1+n])
	}
	b := make([]byte, 1+len(message))
	copy(b[1:], message)
	return sum256(b)
}

// NodeHash is SHA-256(0x01 || left || right), each 32 bytes.
func NodeHash(left, right []byte) [HashSize]byte {
	var buf [1 + 2*HashSize]byte
	buf[0] = 0x01
	copy(buf[1:], left[:HashSize])
	copy(buf[1+HashSize:], right[:HashSize])
	return sum256(buf[:])
}

// Carrier is a parsed batch carrier. Its slices alias the bytes it was
// parsed from.
type Carrier struct {
	Signature   []byte // 64 bytes: the batch key's signature over the root message
	Index, Size uint32 // the leaf's place in the batch, and the batch's size
	Path        []byte // the audit path, HashSize bytes per sibling, leaf up
}

// IsCarrierSize reports whether n bytes can be a batch carrier: a header
// and whole hashes, within MaxCarrierSize. Whether the path's length fits
// the index and size is Root's to check.
func IsCarrierSize(n int) bool {
	return n >= HeaderSize && n <= MaxCarrierSize && (n-HeaderSize)%HashSize == 0
}

// ParseCarrier splits a batch carrier; ok is false for anything that is not
// one by its version byte and length.
func ParseCarrier(b []byte) (c Carrier, ok bool) {
	if !IsCarrierSize(len(b)) || b[0] != Version {
		return c, false
	}
	return Carrier{
		Signature: b[1 : 1+SignatureSize],
		Index:     binary.BigEndian.Uint32(b[1+SignatureSize:]),
		Size:      binary.BigEndian.Uint32(b[1+SignatureSize+4:]),
		Path:      b[HeaderSize:],
	}, true
}

// Root recomputes the root of the batch's tree from the leaf's hash, the
// index, the size and the path: RFC 9162 §2.1.3.2, step by step. ok is
// false for an index outside the batch (a size of 0 included) and for a
// path that is not exactly as long as index and size make it.
func (c *Carrier) Root(leaf [HashSize]byte) (root [HashSize]byte, ok bool) {
	if c.Index >= c.Size || len(c.Path)%HashSize != 0 {
		return root, false
	}
	fn, sn := c.Index, c.Size-1
	r := leaf
	for p := c.Path; len(p) > 0; p = p[HashSize:] {
		if sn == 0 {
			return root, false // the path is longer than the tree is deep
		}
		if fn&1 == 1 || fn == sn {
			r = NodeHash(p[:HashSize], r[:])
			for fn&1 == 0 && fn != 0 {
				fn >>= 1
				sn >>= 1
			}
		} else {
			r = NodeHash(r[:], p[:HashSize])
		}
		fn >>= 1
		sn >>= 1
	}
	if sn != 0 {
		return root, false // the path stops short of the root
	}
	return r, true
}

// CarrierRoot parses sig as a batch carrier and recomputes its batch's
// root for message's leaf; ok is false when sig is no carrier or its path
// does not fit (ParseCarrier, Root).
func CarrierRoot(sig, message []byte) (c Carrier, root [HashSize]byte, ok bool) {
	if c, ok = ParseCarrier(sig); !ok {
		return c, root, false
	}
	root, ok = c.Root(LeafHash(message))
	return c, root, ok
}

// AppendRootMessage appends the bytes a batch's key signs: the UTF-8 of
// "fenceview/batch/v2 <size> <root>", the size in decimal and the root in
// 64 lowercase hex digits.
func AppendRootMessage(dst []byte, size uint32, root *[HashSize]byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, RootPrefix...)
	dst = strconv.AppendUint(dst, uint64(size), 10)
	dst = append(dst, ' ')
	for _, b := range root {
		dst = append(dst, hex[b>>4], hex[b&0x0f])
	}
	return dst
}

// AppendCarrier appends the carrier of one grant of a batch: sig (64
// bytes), its index, the batch's size and its path (leaf up).
func AppendCarrier(dst, sig []byte, index, size uint32, path [][HashSize]byte) []byte {
	dst = append(dst, Version)
	dst = append(dst, sig[:SignatureSize]...)
	dst = binary.BigEndian.AppendUint32(dst, index)
	dst = binary.BigEndian.AppendUint32(dst, size)
	for i := range path {
		dst = append(dst, path[i][:]...)
	}
	return dst
}

// RootCacheSize is the number of verified roots a RootCache holds.
const RootCacheSize = 1024

// RootCache remembers batch signatures verified: that key made sig over
// the root message of size and root. A batch's other grants then cost
// hashing, not an Ed25519 verification. A hit needs the very key, size,
// root and signature bytes verified: a carrier with a flipped signature
// byte is refused even after its batch was verified, and so is one whose
// size was rewritten to another that its path also fits (the same root,
// but a message nobody signed). A key that stops being trusted is no
// longer asked about, so its roots stop counting at once.
//
// It is direct-mapped (each key and root has one slot; a newer entry
// replaces an older one), so it is bounded and needs no map: only signed
// roots get in, so nobody without a key can crowd it. Not safe for
// concurrent use; the zero value is empty.
type RootCache struct {
	slots [RootCacheSize]rootEntry
}

type rootEntry struct {
	key, root [HashSize]byte
	sig       [SignatureSize]byte
	size      uint32
	used      bool
}

func (c *RootCache) slot(key, root *[HashSize]byte) *rootEntry {
	// The root is a hash: its bytes are already uniform.
	i := (binary.LittleEndian.Uint32(root[:4]) ^ binary.LittleEndian.Uint32(key[:4])) % RootCacheSize
	return &c.slots[i]
}

// Has reports whether key was verified to have made sig (64 bytes) over
// the root message of size and root.
func (c *RootCache) Has(key *[HashSize]byte, size uint32, root *[HashSize]byte, sig []byte) bool {
	e := c.slot(key, root)
	return e.used && e.size == size && e.key == *key && e.root == *root && string(e.sig[:]) == string(sig)
}

// Add records that key made sig (64 bytes) over the root message of size
// and root.
func (c *RootCache) Add(key *[HashSize]byte, size uint32, root *[HashSize]byte, sig []byte) {
	*c.slot(key, root) = rootEntry{key: *key, root: *root, sig: [SignatureSize]byte(sig), size: size, used: true}
}
