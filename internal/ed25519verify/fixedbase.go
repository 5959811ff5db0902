package ed25519verify

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
type fixedBaseTable [32][8]preComputedGroupElement

// build fills t with P's multiples.
func (t *fixedBaseTable) build(p *extendedGroupElement) {
	pts := new([256]extendedGroupElement) // pts[8j+i] becomes t[j][i]
	cur := *p
	for j := 0; j < 32; j++ {
		row := pts[8*j : 8*j+8]
		row[0] = cur
		var c cachedGroupElement
		cur.toCached(&c)
		var r completedGroupElement
		for i := 1; i < 8; i++ {
			geAdd(&r, &row[i-1], &c) // the formula is complete: P+P is fine
			r.toExtended(&row[i])
		}
		// cur = 256·cur: eight doublings.
		var q projectiveGroupElement
		cur.toProjective(&q)
		for k := 0; k < 8; k++ {
			q.double(&r)
			r.toProjective(&q)
		}
		r.toExtended(&cur)
	}
	// To affine, with one inversion for all 256 points (Montgomery's
	// trick): prefix[n] is the product of the first n+1 Zs.
	prefix := new([256]fieldElement)
	prefix[0] = pts[0].Z
	for n := 1; n < 256; n++ {
		feMul(&prefix[n], &prefix[n-1], &pts[n].Z)
	}
	var inv, zinv fieldElement
	feInvert(&inv, &prefix[255]) // 1/(Z0·…·Z255)
	for n := 255; n >= 0; n-- {
		if n > 0 {
			feMul(&zinv, &inv, &prefix[n-1]) // 1/Zn
			feMul(&inv, &inv, &pts[n].Z)     // 1/(Z0·…·Zn-1)
		} else {
			zinv = inv
		}
		var x, y, s fieldElement
		feMul(&x, &pts[n].X, &zinv)
		feMul(&y, &pts[n].Y, &zinv)
		e := &t[n/8][n%8]
		feAdd(&s, &y, &x)
		feCarry(&e.yPlusX, &s)
		feSub(&s, &y, &x)
		feCarry(&e.yMinusX, &s)
		feMul(&s, &x, &y)
		feMul(&e.xy2d, &s, &d2)
	}
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
func addDigit(h *extendedGroupElement, row *[8]preComputedGroupElement, e int8) {
	var r completedGroupElement
	switch {
	case e > 0:
		geMixedAdd(&r, h, &row[e-1])
	case e < 0:
		geMixedSub(&r, h, &row[-e-1])
	default:
		return
	}
	r.toExtended(h)
}

// doubleFixedBaseMult sets out = [a]P + [b]Q, where ta and tb are P's and
// Q's tables, a[31] <= 127 and b[31] <= 127. As ge_scalarmult_base: the
// odd digits' sum, times 16, plus the even digits'.
func doubleFixedBaseMult(out *projectiveGroupElement, ta *fixedBaseTable, a *[32]byte, tb *fixedBaseTable, b *[32]byte) {
	var ea, eb [64]int8
	radix16(&ea, a)
	radix16(&eb, b)
	h := extendedGroupElement{} // the identity: (0:1:1:0)
	feOne(&h.Y)
	feOne(&h.Z)
	for i := 1; i < 64; i += 2 {
		addDigit(&h, &ta[i/2], ea[i])
		addDigit(&h, &tb[i/2], eb[i])
	}
	var r completedGroupElement
	var q projectiveGroupElement
	h.toProjective(&q)
	for k := 0; k < 4; k++ {
		q.double(&r)
		r.toProjective(&q)
	}
	r.toExtended(&h)
	for i := 0; i < 64; i += 2 {
		addDigit(&h, &ta[i/2], ea[i])
		addDigit(&h, &tb[i/2], eb[i])
	}
	h.toProjective(out)
}

// prepareTable decodes the key and builds -A's table; a key that is not a
// point gets none, and verifies nothing.
func (k *PublicKey) prepareTable() {
	var minusA extendedGroupElement
	if !minusA.fromBytes(&k.key) {
		return
	}
	feNeg(&minusA.X, &minusA.X)
	feNeg(&minusA.T, &minusA.T)
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
	if !scMinimal(s) {
		return false
	}
	digest := sum512(sig[:32], k.key[:], message)
	var h [32]byte
	scReduce(&h, &digest)
	// [S]B = R + [k]A  -->  [k](-A) + [S]B = R
	var R projectiveGroupElement
	doubleFixedBaseMult(&R, k.table, &h, &baseTable, s)
	var checkR [32]byte
	R.toBytes(&checkR)
	return string(sig[:32]) == string(checkR[:])
}
