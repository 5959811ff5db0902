package merkle

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"testing"
)

// An independent implementation of RFC 9162 §2.1.1 and §2.1.3.1, written
// from the RFC's recursive definitions over the leaves, with crypto/sha256:
// MTH(D[n]) and PATH(m, D[n]).
func mth(leaves [][]byte) []byte {
	n := len(leaves)
	if n == 0 {
		s := sha256.Sum256(nil)
		return s[:]
	}
	if n == 1 {
		s := sha256.Sum256(append([]byte{0x00}, leaves[0]...))
		return s[:]
	}
	k := 1
	for k*2 < n {
		k *= 2
	}
	s := sha256.Sum256(append(append([]byte{0x01}, mth(leaves[:k])...), mth(leaves[k:])...))
	return s[:]
}

func path(m int, leaves [][]byte) [][]byte {
	n := len(leaves)
	if n == 1 {
		return nil
	}
	k := 1
	for k*2 < n {
		k *= 2
	}
	if m < k {
		return append(path(m, leaves[:k]), mth(leaves[k:]))
	}
	return append(path(m-k, leaves[k:]), mth(leaves[:k]))
}

func leaves(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte("fenceview/v1 r-" + string(rune('a'+i%26)) + " " + hex.EncodeToString([]byte{byte(i)}))
	}
	return out
}

func carrierFor(sig []byte, index, size uint32, p [][]byte) []byte {
	hs := make([][HashSize]byte, len(p))
	for i := range p {
		hs[i] = [HashSize]byte(p[i])
	}
	return AppendCarrier(nil, sig, index, size, hs)
}

// For every index of every batch size 1..70, the root recomputed from a
// leaf's message, index, size and RFC 9162 path is the tree's MTH; and any
// change to the proof (a flipped path byte, another index, a path one hash
// short or long, a sibling's path, size 0, an index past the size) gives no
// root or another.
func TestRootOfEveryIndexOfEverySize(t *testing.T) {
	sig := bytes.Repeat([]byte{7}, SignatureSize)
	for n := 1; n <= 70; n++ {
		ls := leaves(n)
		want := mth(ls)
		paths := make([][][]byte, n)
		for m := range paths {
			paths[m] = path(m, ls)
		}
		for m := 0; m < n; m++ {
			p := paths[m]
			raw := carrierFor(sig, uint32(m), uint32(n), p)
			c, ok := ParseCarrier(raw)
			if !ok || c.Index != uint32(m) || c.Size != uint32(n) || !bytes.Equal(c.Signature, sig) {
				t.Fatalf("n=%d m=%d: ParseCarrier = %+v, %v", n, m, c, ok)
			}
			root, ok := c.Root(LeafHash(ls[m]))
			if !ok || !bytes.Equal(root[:], want) {
				t.Fatalf("n=%d m=%d: root %x %v, want %x", n, m, root, ok, want)
			}
			bad := func(what string, raw []byte, leaf []byte) {
				t.Helper()
				c, ok := ParseCarrier(raw)
				if !ok {
					return
				}
				if root, ok := c.Root(LeafHash(leaf)); ok && bytes.Equal(root[:], want) {
					t.Fatalf("n=%d m=%d: %s still gives the root", n, m, what)
				}
			}
			for i := range p {
				flipped := bytes.Clone(raw)
				flipped[HeaderSize+32*i+i%32] ^= 0x10
				bad("a flipped path byte", flipped, ls[m])
			}
			if len(p) > 0 {
				bad("a path one hash short", raw[:len(raw)-HashSize], ls[m])
			}
			bad("a path one hash long", append(bytes.Clone(raw), make([]byte, HashSize)...), ls[m])
			for other := 0; other < n; other++ {
				if other != m {
					bad("another index", carrierFor(sig, uint32(other), uint32(n), p), ls[m])
					bad("a sibling's proof", carrierFor(sig, uint32(other), uint32(n), paths[other]), ls[m])
				}
			}
			bad("size 0", carrierFor(sig, uint32(m), 0, p), ls[m])
			bad("index = size", carrierFor(sig, uint32(n), uint32(n), p), ls[m])
			// Another size is not always refused here: in a larger tree
			// whose split puts this leaf on the same path it leads to the
			// same root. The signed root message names the size, so such
			// a carrier fails its signature (TestRewrittenSize).
			bad("another leaf", raw, []byte("fenceview/v1 other 1"))
		}
	}
}

// Carriers are refused by their version byte and length before anything
// is hashed.
func TestParseCarrierBounds(t *testing.T) {
	sig := make([]byte, SignatureSize)
	good := carrierFor(sig, 0, 1, nil)
	if len(good) != HeaderSize {
		t.Fatalf("a batch of one is %d bytes", len(good))
	}
	if _, ok := ParseCarrier(good); !ok {
		t.Fatal("a batch of one does not parse")
	}
	wrongVersion := bytes.Clone(good)
	wrongVersion[0] = 0x01 // the carrier whose signature did not bind the size
	hashes := make([][]byte, MaxPath)
	for i := range hashes {
		hashes[i] = bytes.Repeat([]byte{byte(i)}, HashSize)
	}
	longest := carrierFor(sig, 0, 1, hashes)
	for name, b := range map[string][]byte{
		"empty": nil, "64 bytes": sig, "version 1": wrongVersion, "a header one byte short": good[:HeaderSize-1],
		"half a hash": append(bytes.Clone(good), 1, 2, 3), "33 hashes": append(bytes.Clone(longest), make([]byte, HashSize)...),
	} {
		if _, ok := ParseCarrier(b); ok {
			t.Errorf("%s: parsed", name)
		}
	}
	if _, ok := ParseCarrier(longest); !ok || len(longest) != MaxCarrierSize {
		t.Errorf("the longest carrier (%d bytes) does not parse", len(longest))
	}
	// The largest batch there is, 2^32-1 grants: its first leaf is 32
	// levels deep, its last 31.
	c, _ := ParseCarrier(longest)
	c.Index, c.Size = 0, 1<<32-1
	if _, ok := c.Root(LeafHash([]byte("x"))); !ok {
		t.Error("the first leaf of 2^32-1 has no root with 32 hashes")
	}
	c.Index = 1<<32 - 2
	if _, ok := c.Root(LeafHash([]byte("x"))); ok {
		t.Error("the last leaf of 2^32-1 has a root with 32 hashes")
	}
	c.Path = c.Path[HashSize:]
	if _, ok := c.Root(LeafHash([]byte("x"))); !ok {
		t.Error("the last leaf of 2^32-1 has no root with 31 hashes")
	}
}

// The message a batch's key signs names the size and the root.
func TestRootMessage(t *testing.T) {
	var root [HashSize]byte
	for i := range root {
		root[i] = byte(i * 9)
	}
	for _, size := range []uint32{1, 70, 1<<32 - 1} {
		got := string(AppendRootMessage(nil, size, &root))
		want := "fenceview/batch/v2 " + strconv.FormatUint(uint64(size), 10) + " " + hex.EncodeToString(root[:])
		if got != want || len(got) > MaxRootMessageSize {
			t.Fatalf("%q, want %q", got, want)
		}
	}
	if n := len(AppendRootMessage(nil, 1<<32-1, &root)); n != MaxRootMessageSize {
		t.Fatalf("the longest root message is %d bytes, MaxRootMessageSize %d", n, MaxRootMessageSize)
	}
}

// The attack the size in the signed message stops: one path fits several
// sizes (index 2 of 5 also fits 6, 7 and 8) and leads to the same root, so
// a carrier whose size is rewritten recomputes the verified root. The root
// message then differs, and so must the cache's answer.
func TestRewrittenSize(t *testing.T) {
	ls := leaves(5)
	c := Carrier{Index: 2, Size: 5}
	for _, h := range path(2, ls) {
		c.Path = append(c.Path, h...)
	}
	root, ok := c.Root(LeafHash(ls[2]))
	if !ok {
		t.Fatal("no root")
	}
	var sizes []uint32
	for size := uint32(3); size <= 16; size++ {
		if size == 5 {
			continue
		}
		c.Size = size
		if r, ok := c.Root(LeafHash(ls[2])); ok && r == root {
			sizes = append(sizes, size)
			if string(AppendRootMessage(nil, size, &r)) == string(AppendRootMessage(nil, 5, &root)) {
				t.Fatalf("size %d: the same root message as size 5", size)
			}
		}
	}
	if len(sizes) == 0 {
		t.Fatal("no other size fits the path: the attack this guards against is not reproduced")
	}
	t.Logf("index 2 of 5 leads to the same root under sizes %v", sizes)
	var cache RootCache
	key, sig := [HashSize]byte{9}, bytes.Repeat([]byte{1}, SignatureSize)
	cache.Add(&key, 5, &root, sig)
	for _, size := range sizes {
		if cache.Has(&key, size, &root, sig) {
			t.Fatalf("the cache answers for size %d after verifying size 5", size)
		}
	}
}

// A cached root counts for its key, size and exact signature only.
func TestRootCache(t *testing.T) {
	var c RootCache
	key, other, root := [HashSize]byte{1}, [HashSize]byte{2}, [HashSize]byte{3, 4}
	sig := bytes.Repeat([]byte{5}, SignatureSize)
	if c.Has(&key, 7, &root, sig) {
		t.Fatal("empty cache has a root")
	}
	c.Add(&key, 7, &root, sig)
	flipped := bytes.Clone(sig)
	flipped[63] ^= 1
	if !c.Has(&key, 7, &root, sig) || c.Has(&other, 7, &root, sig) || c.Has(&key, 7, &root, flipped) ||
		c.Has(&key, 7, &[HashSize]byte{3, 5}, sig) || c.Has(&key, 8, &root, sig) {
		t.Fatal("the cache answers for another key, size, root or signature")
	}
	// Bounded: filling it with other roots evicts the first.
	for i := range 4 * RootCacheSize {
		var r [HashSize]byte
		binary.LittleEndian.PutUint32(r[:], uint32(i))
		c.Add(&key, 7, &r, sig)
	}
	if c.Has(&key, 7, &root, sig) {
		t.Fatal("the cache kept an entry past its bound")
	}
}

// runProof is the other way to walk a proof, top-down as tlog's
// runRecordProof does: split [lo, hi) at the largest power of two below
// its size and recurse toward leaf n, taking hashes from the path's end.
func runProof(p [][]byte, lo, hi, n uint64, leaf [HashSize]byte) ([HashSize]byte, bool) {
	if lo+1 == hi {
		return leaf, len(p) == 0
	}
	if len(p) == 0 {
		return leaf, false
	}
	k := uint64(1)
	for k*2 < hi-lo {
		k *= 2
	}
	last := p[len(p)-1]
	if n < lo+k {
		r, ok := runProof(p[:len(p)-1], lo, lo+k, n, leaf)
		return NodeHash(r[:], last), ok
	}
	r, ok := runProof(p[:len(p)-1], lo+k, hi, n, leaf)
	return NodeHash(last, r[:]), ok
}

// Any bytes: ParseCarrier and Root never panic, and Root agrees with the
// top-down walk on whether a path fits its index and size and on the root.
func FuzzCarrier(f *testing.F) {
	sig := make([]byte, SignatureSize)
	ls := leaves(7)
	f.Add(carrierFor(sig, 3, 7, path(3, ls)), ls[3])
	f.Add(carrierFor(sig, 6, 7, path(6, ls)), ls[6])
	f.Add(carrierFor(sig, 0, 1, nil), []byte("fenceview/v1 a 1"))
	f.Add(carrierFor(sig, 5, 5, path(3, ls)), ls[3])
	f.Fuzz(func(t *testing.T, raw, message []byte) {
		c, ok := ParseCarrier(raw)
		if !ok {
			return
		}
		leaf := LeafHash(message)
		root, ok := c.Root(leaf)
		var hs [][]byte
		for p := c.Path; len(p) > 0; p = p[HashSize:] {
			hs = append(hs, p[:HashSize])
		}
		want, wantOK := leaf, false
		if c.Index < c.Size {
			want, wantOK = runProof(hs, 0, uint64(c.Size), uint64(c.Index), leaf)
		}
		if ok != wantOK || (ok && root != want) {
			t.Fatalf("index %d size %d, %d hashes: Root %x %v, top-down %x %v", c.Index, c.Size, len(hs), root, ok, want, wantOK)
		}
	})
}
