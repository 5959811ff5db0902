package merkle

import (
	"bytes"
	"fmt"
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

// The tree's root and every path agree with golang.org/x/mod/sumdb/tlog
// (the checksum database's RFC 6962 code, written apart from this one) and
// with the RFC's recursive definitions in merkle_test.go, for every index
// of every size up to 70, and every path leads Root back to the root.
func TestTreeAgreesWithTlog(t *testing.T) {
	for n := 1; n <= 70; n++ {
		msgs := leaves(n)
		hashes := make([][HashSize]byte, n)
		var stored []tlog.Hash
		read := tlog.HashReaderFunc(func(xs []int64) ([]tlog.Hash, error) {
			out := make([]tlog.Hash, len(xs))
			for i, x := range xs {
				out[i] = stored[x]
			}
			return out, nil
		})
		for i, m := range msgs {
			hashes[i] = LeafHash(m)
			hs, err := tlog.StoredHashes(int64(i), m, read)
			if err != nil {
				t.Fatal(err)
			}
			stored = append(stored, hs...)
		}
		tree := NewTree(hashes)
		want, err := tlog.TreeHash(int64(n), read)
		if err != nil {
			t.Fatal(err)
		}
		if got := tree.Root(); got != [HashSize]byte(want) || !bytes.Equal(got[:], mth(msgs)) {
			t.Fatalf("size %d: root %x, tlog %x", n, got, want)
		}
		for i := range n {
			t.Run(fmt.Sprintf("%d/%d", i, n), func(t *testing.T) {
				got := tree.AppendPath(nil, i)
				proof, err := tlog.ProveRecord(int64(n), int64(i), read)
				if err != nil {
					t.Fatal(err)
				}
				rfc := path(i, msgs)
				if len(got) != len(proof) || len(got) != len(rfc) {
					t.Fatalf("path of %d hashes, tlog %d, RFC %d", len(got), len(proof), len(rfc))
				}
				for j := range got {
					if got[j] != [HashSize]byte(proof[j]) || !bytes.Equal(got[j][:], rfc[j]) {
						t.Fatalf("hash %d of the path differs", j)
					}
				}
				c := Carrier{Index: uint32(i), Size: uint32(n)}
				for _, h := range got {
					c.Path = append(c.Path, h[:]...)
				}
				if root, ok := c.Root(hashes[i]); !ok || root != tree.Root() {
					t.Fatalf("the path does not lead back to the root")
				}
			})
		}
	}
}

func TestTreeKeepsItsOwnLeaves(t *testing.T) {
	hashes := [][HashSize]byte{LeafHash([]byte("a")), LeafHash([]byte("b"))}
	tree := NewTree(hashes)
	root := tree.Root()
	hashes[0] = LeafHash([]byte("c"))
	if tree.Root() != root || tree.AppendPath(nil, 1)[0] != LeafHash([]byte("a")) {
		t.Fatal("the tree changed with its caller's slice")
	}
}

// A tree's nodes are allocated once: the room for the nodes moved up
// unchanged is counted beforehand, not found by growing (which doubles).
func TestTreeAllocatesItsNodesOnce(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 7, 25, 63, 64, 65, 100} {
		tree := NewTree(make([][HashSize]byte, n))
		if got := cap(tree.nodes); got < len(tree.nodes) || got > 2*n+8 {
			t.Errorf("%d leaves: %d nodes in room for %d", n, len(tree.nodes), got)
		}
	}
}
