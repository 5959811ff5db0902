// Copyright 2016 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package ed25519verify

// Group elements are members of the elliptic curve -x^2 + y^2 = 1 + d * x^2 *
// y^2 where d = -121665/121666.
//
// Several representations are used:
//   projectiveGroupElement: (X:Y:Z) satisfying x=X/Z, y=Y/Z
//   extendedGroupElement: (X:Y:Z:T) satisfying x=X/Z, y=Y/Z, XY=ZT
//   completedGroupElement: ((X:Z),(Y:T)) satisfying x=X/Z, y=Y/T
//   preComputedGroupElement: (y+x,y-x,2dxy)

type projectiveGroupElement struct {
	X, Y, Z fieldElement
}

type extendedGroupElement struct {
	X, Y, Z, T fieldElement
}

type completedGroupElement struct {
	X, Y, Z, T fieldElement
}

type preComputedGroupElement struct {
	yPlusX, yMinusX, xy2d fieldElement
}

type cachedGroupElement struct {
	yPlusX, yMinusX, Z, T2d fieldElement
}

func (p *projectiveGroupElement) zero() {
	feZero(&p.X)
	feOne(&p.Y)
	feOne(&p.Z)
}

func (p *projectiveGroupElement) double(r *completedGroupElement) {
	var t0 fieldElement

	feSquare(&r.X, &p.X)
	feSquare(&r.Z, &p.Y)
	feSquare2(&r.T, &p.Z)
	feAdd(&r.Y, &p.X, &p.Y)
	feSquare(&t0, &r.Y)
	feAdd(&r.Y, &r.Z, &r.X)
	feSub(&r.Z, &r.Z, &r.X)
	feSub(&r.X, &t0, &r.Y)
	feSub(&r.T, &r.T, &r.Z)
}

func (p *projectiveGroupElement) toBytes(s *[32]byte) {
	var recip, x, y fieldElement

	feInvert(&recip, &p.Z)
	feMul(&x, &p.X, &recip)
	feMul(&y, &p.Y, &recip)
	feToBytes(s, &y)
	s[31] ^= feIsNegative(&x) << 7
}

func (p *extendedGroupElement) toCached(r *cachedGroupElement) {
	feAdd(&r.yPlusX, &p.Y, &p.X)
	feSub(&r.yMinusX, &p.Y, &p.X)
	feCopy(&r.Z, &p.Z)
	feMul(&r.T2d, &p.T, &d2)
}

func (p *extendedGroupElement) toProjective(r *projectiveGroupElement) {
	feCopy(&r.X, &p.X)
	feCopy(&r.Y, &p.Y)
	feCopy(&r.Z, &p.Z)
}

func (p *extendedGroupElement) fromBytes(s *[32]byte) bool {
	var u, v, v3, vxx, check fieldElement

	feFromBytes(&p.Y, s)
	feOne(&p.Z)
	feSquare(&u, &p.Y)
	feMul(&v, &u, &d)
	feSub(&u, &u, &p.Z) // y = y^2-1
	feAdd(&v, &v, &p.Z) // v = dy^2+1

	feSquare(&v3, &v)
	feMul(&v3, &v3, &v) // v3 = v^3
	feSquare(&p.X, &v3)
	feMul(&p.X, &p.X, &v)
	feMul(&p.X, &p.X, &u) // x = uv^7

	fePow22523(&p.X, &p.X) // x = (uv^7)^((q-5)/8)
	feMul(&p.X, &p.X, &v3)
	feMul(&p.X, &p.X, &u) // x = uv^3(uv^7)^((q-5)/8)

	feSquare(&vxx, &p.X)
	feMul(&vxx, &vxx, &v)
	feSub(&check, &vxx, &u) // vx^2-u
	if feIsNonZero(&check) == 1 {
		feAdd(&check, &vxx, &u) // vx^2+u
		if feIsNonZero(&check) == 1 {
			return false
		}
		feMul(&p.X, &p.X, &sqrtM1)
	}

	if feIsNegative(&p.X) != (s[31] >> 7) {
		feNeg(&p.X, &p.X)
	}

	feMul(&p.T, &p.X, &p.Y)
	return true
}

func (p *completedGroupElement) toProjective(r *projectiveGroupElement) {
	feMul(&r.X, &p.X, &p.T)
	feMul(&r.Y, &p.Y, &p.Z)
	feMul(&r.Z, &p.Z, &p.T)
}

func (p *completedGroupElement) toExtended(r *extendedGroupElement) {
	feMul(&r.X, &p.X, &p.T)
	feMul(&r.Y, &p.Y, &p.Z)
	feMul(&r.Z, &p.Z, &p.T)
	feMul(&r.T, &p.X, &p.Y)
}

func geAdd(r *completedGroupElement, p *extendedGroupElement, q *cachedGroupElement) {
	var t0 fieldElement

	feAdd(&r.X, &p.Y, &p.X)
	feSub(&r.Y, &p.Y, &p.X)
	feMul(&r.Z, &r.X, &q.yPlusX)
	feMul(&r.Y, &r.Y, &q.yMinusX)
	feMul(&r.T, &q.T2d, &p.T)
	feMul(&r.X, &p.Z, &q.Z)
	feAdd(&t0, &r.X, &r.X)
	feSub(&r.X, &r.Z, &r.Y)
	feAdd(&r.Y, &r.Z, &r.Y)
	feAdd(&r.Z, &t0, &r.T)
	feSub(&r.T, &t0, &r.T)
}

func geMixedAdd(r *completedGroupElement, p *extendedGroupElement, q *preComputedGroupElement) {
	var t0 fieldElement

	feAdd(&r.X, &p.Y, &p.X)
	feSub(&r.Y, &p.Y, &p.X)
	feMul(&r.Z, &r.X, &q.yPlusX)
	feMul(&r.Y, &r.Y, &q.yMinusX)
	feMul(&r.T, &q.xy2d, &p.T)
	feAdd(&t0, &p.Z, &p.Z)
	feSub(&r.X, &r.Z, &r.Y)
	feAdd(&r.Y, &r.Z, &r.Y)
	feAdd(&r.Z, &t0, &r.T)
	feSub(&r.T, &t0, &r.T)
}

func geMixedSub(r *completedGroupElement, p *extendedGroupElement, q *preComputedGroupElement) {
	var t0 fieldElement

	feAdd(&r.X, &p.Y, &p.X)
	feSub(&r.Y, &p.Y, &p.X)
	feMul(&r.Z, &r.X, &q.yMinusX)
	feMul(&r.Y, &r.Y, &q.yPlusX)
	feMul(&r.T, &q.xy2d, &p.T)
	feAdd(&t0, &p.Z, &p.Z)
	feSub(&r.X, &r.Z, &r.Y)
	feAdd(&r.Y, &r.Z, &r.Y)
	feSub(&r.Z, &t0, &r.T)
	feAdd(&r.T, &t0, &r.T)
}
