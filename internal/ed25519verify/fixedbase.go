package ed25519verify

import "github.com/fenceview/fenceview/internal/third_party/ref10"

// A verification computes R' = [k](-A) + [S]B and compares it with the
// signature's R. ref10 (and crypto/ed25519) compute it with a shared chain
// of 253 doublings; here both points are fixed (B always, A for as long as
// the key is trusted), so each gets a table of its multiples once, and the
// sum costs 128 mixed additions and four doublings: half the field
// operations, which is what WebAssembly, without a wide multiply, needs.

// fixedBaseTable[j][i] is (i+1)·256^j·P, for a point P, in precomputed
// (affine) form: with it, [a]P is 64 mixed additions and four doublings
// (ref10's ge_scalarmult_base, here variable-time: verifying handles no
// secrets). 30 KB.
type fixedBaseTable [32][8]ref10.PreComputedGroupElement

// build fills t with P's multiples.
func (t *fixedBaseTable) build(p *ref10.ExtendedGroupElement) {
	pts := new([256]ref10.ExtendedGroupElement) // pts[8j+i] becomes t[j][i]
	cur := *p
	for j := 0; j < 32; j++ {
		row := pts[8*j : 8*j+8]
		row[0] = cur
		var c ref10.CachedGroupElement
		cur.ToCached(&c)
		var r ref10.CompletedGroupElement
		for i := 1; i < 8; i++ {
			ref10.GeAdd(&r, &row[i-1], &c) // the formula is complete: P+P is fine
			r.ToExtended(&row[i])
		}
		doubleTimes(&cur, 8) // cur = 256·cur
	}
	// To affine, with one inversion for all 256 points (Montgomery's
	// trick): prefix[n] is the product of the first n+1 Zs.
	prefix := new([256]ref10.FieldElement)
	prefix[0] = pts[0].Z
	for n := 1; n < 256; n++ {
		ref10.FeMul(&prefix[n], &prefix[n-1], &pts[n].Z)
	}
	var inv, zinv ref10.FieldElement
	ref10.FeInvert(&inv, &prefix[255]) // 1/(Z0·…·Z255)
	for n := 255; n >= 0; n-- {
		if n > 0 {
			ref10.FeMul(&zinv, &inv, &prefix[n-1]) // 1/Zn
			ref10.FeMul(&inv, &inv, &pts[n].Z)     // 1/(Z0·…·Zn-1)
		} else {
			zinv = inv
		}
		var x, y, s ref10.FieldElement
		ref10.FeMul(&x, &pts[n].X, &zinv)
		ref10.FeMul(&y, &pts[n].Y, &zinv)
		e := &t[n/8][n%8]
		ref10.FeAdd(&s, &y, &x)
		ref10.FeCarry(&e.YPlusX, &s)
		ref10.FeSub(&s, &y, &x)
		ref10.FeCarry(&e.YMinusX, &s)
		ref10.FeMul(&s, &x, &y)
		ref10.FeMul(&e.XY2d, &s, &ref10.D2)
	}
}

// doubleTimes sets p = 2^n·p (n >= 1), in projective coordinates between
// the doublings, which need no T.
func doubleTimes(p *ref10.ExtendedGroupElement, n int) {
	var r ref10.CompletedGroupElement
	var q ref10.ProjectiveGroupElement
	p.ToProjective(&q)
	for k := 0; k < n; k++ {
		q.Double(&r)
		r.ToProjective(&q)
	}
	r.ToExtended(p)
}

// radix16 writes a (a[31] <= 127) as 64 signed digits in [-8, 8]:
// a = e[0] + 16·e[1] + ... + 16^63·e[63].
func radix16(e *[64]int8, a *[32]byte) {
	for i, v := range a {
		e[2*i] = int8(v & 15)
		e[2*i+1] = int8(v >> 4)
	}
	carry := int8(0)
	for i := 0; i < 63; i++ {
		e[i] += carry
		carry = (e[i] + 8) >> 4
		e[i] -= carry << 4
	}
	e[63] += carry
}

// addDigit adds e·row[0] to h (row[i] is (i+1) times one point).
func addDigit(h *ref10.ExtendedGroupElement, row *[8]ref10.PreComputedGroupElement, e int8) {
	var r ref10.CompletedGroupElement
	switch {
	case e > 0:
		ref10.GeMixedAdd(&r, h, &row[e-1])
	case e < 0:
		ref10.GeMixedSub(&r, h, &row[-e-1])
	default:
		return
	}
	r.ToExtended(h)
}

// doubleFixedBaseMult sets out = [a]P + [b]Q, where ta and tb are P's and
// Q's tables, a[31] <= 127 and b[31] <= 127. As ge_scalarmult_base: the
// odd digits' sum, times 16, plus the even digits'.
func doubleFixedBaseMult(out *ref10.ProjectiveGroupElement, ta *fixedBaseTable, a *[32]byte, tb *fixedBaseTable, b *[32]byte) {
	var ea, eb [64]int8
	radix16(&ea, a)
	radix16(&eb, b)
	h := ref10.ExtendedGroupElement{} // the identity: (0:1:1:0)
	ref10.FeOne(&h.Y)
	ref10.FeOne(&h.Z)
	for i := 1; i < 64; i += 2 {
		addDigit(&h, &ta[i/2], ea[i])
		addDigit(&h, &tb[i/2], eb[i])
	}
	doubleTimes(&h, 4)
	for i := 0; i < 64; i += 2 {
		addDigit(&h, &ta[i/2], ea[i])
		addDigit(&h, &tb[i/2], eb[i])
	}
	h.ToProjective(out)
}

// prepareTable decodes the key and builds -A's table; a key that is not a
// point gets none, and verifies nothing.
func (k *PublicKey) prepareTable() {
	var minusA ref10.ExtendedGroupElement
	if !minusA.FromBytes(&k.key) {
		return
	}
	ref10.FeNeg(&minusA.X, &minusA.X)
	ref10.FeNeg(&minusA.T, &minusA.T)
	k.table = new(fixedBaseTable)
	k.table.build(&minusA)
}

// verifyTable is Verify on ref10's arithmetic and the two tables: what the
// WebAssembly build runs, and what the native tests hold to crypto/ed25519.
func (k *PublicKey) verifyTable(message, sig []byte) bool {
	if k.table == nil || len(sig) != SignatureSize || sig[63]&224 != 0 {
		return false
	}
	// RFC 8032 §5.1.7: S must be below the group order (no malleability).
	s := (*[32]byte)(sig[32:])
	if !ref10.ScMinimal(s) {
		return false
	}
	digest := sum512(sig[:32], k.key[:], message)
	var h [32]byte
	ref10.ScReduce(&h, &digest)
	// [S]B = R + [k]A  -->  [k](-A) + [S]B = R
	var R ref10.ProjectiveGroupElement
	doubleFixedBaseMult(&R, k.table, &h, (*fixedBaseTable)(&ref10.BaseTable), s)
	var checkR [32]byte
	R.ToBytes(&checkR)
	return string(sig[:32]) == string(checkR[:])
}
