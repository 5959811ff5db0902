package merkle

import "math/bits"

// Tree is a batch's whole Merkle tree, each node hashed once: the signing
// half's root and audit paths. A batch of n grants costs n leaf hashes and
// n-1 node hashes, and a path is read from the levels, not recomputed.
//
// Levels are built bottom up by pairing neighbours; a level's odd last node
// moves up unchanged. That is RFC 9162's tree (§2.1.1): its left subtree is
// always the largest power of two, so only the right edge is ever unpaired.
type Tree struct {
	nodes  [][HashSize]byte // every level, leaves first, one after another
	starts []int            // where each level begins in nodes; the root's level is last
}

// NewTree builds the tree over leaves (leaf hashes, LeafHash); it keeps
// its own copy. It needs at least one leaf.
func NewTree(leaves [][HashSize]byte) *Tree {
	n := len(leaves)
	if n == 0 {
		panic("merkle: a tree of no leaves")
	}
	// 2n-1 nodes, and a node moved up unchanged on at most every level.
	levels := bits.Len(uint(n-1)) + 1
	t := &Tree{nodes: make([][HashSize]byte, 0, 2*n-1+levels), starts: make([]int, 0, levels)}
	t.nodes = append(t.nodes, leaves...)
	t.starts = append(t.starts, 0)
	for start, width := 0, n; width > 1; {
		next := len(t.nodes)
		for i := 0; i+1 < width; i += 2 {
			t.nodes = append(t.nodes, NodeHash(t.nodes[start+i][:], t.nodes[start+i+1][:]))
		}
		if width%2 == 1 {
			t.nodes = append(t.nodes, t.nodes[start+width-1])
		}
		start, width = next, (width+1)/2
		t.starts = append(t.starts, start)
	}
	return t
}

// Size is the number of leaves.
func (t *Tree) Size() int { return t.width(0) }

// Root is the tree's head, MTH of RFC 9162.
func (t *Tree) Root() [HashSize]byte { return t.nodes[len(t.nodes)-1] }

// width is the number of nodes on level l.
func (t *Tree) width(l int) int {
	if l+1 < len(t.starts) {
		return t.starts[l+1] - t.starts[l]
	}
	return len(t.nodes) - t.starts[l]
}

// AppendPath appends leaf index's audit path (RFC 9162 §2.1.3.1, leaf up)
// to dst: the sibling at each level where the node has one. A node moved
// up unchanged has none there.
func (t *Tree) AppendPath(dst [][HashSize]byte, index int) [][HashSize]byte {
	if index < 0 || index >= t.Size() {
		panic("merkle: a leaf index outside the tree")
	}
	for l := 0; l+1 < len(t.starts); l++ {
		if sibling := index ^ 1; sibling < t.width(l) {
			dst = append(dst, t.nodes[t.starts[l]+sibling])
		}
		index >>= 1
	}
	return dst
}
