// Package ed25519batch signs several messages with one Ed25519 key at
// once, producing exactly the signatures crypto/ed25519 would (Ed25519 is
// deterministic), for less CPU.
//
// A signature's costly steps are the scalar multiplication R = r·B and
// encoding R, which needs the inverse of its Z coordinate: about a third of
// the work. Encoding a batch's R values together shares one inversion among
// them (Montgomery's trick: one inversion and three multiplications each).
// fenceview's issuer signs every grant of a group commit in one batch.
package ed25519batch

import (
	"crypto/ed25519"
	"crypto/sha512"
	"errors"

	"filippo.io/edwards25519"
	"filippo.io/edwards25519/field"
)

// Sign appends to sigs the Ed25519 signature of each message by key, in
// order, and returns the extended slice. Each signature equals
// ed25519.Sign(key, message).
func Sign(key ed25519.PrivateKey, messages [][]byte, sigs [][]byte) ([][]byte, error) {
	if len(key) != ed25519.PrivateKeySize {
		return sigs, errors.New("ed25519batch: the key is not an Ed25519 private key")
	}
	h := sha512.Sum512(key[:ed25519.SeedSize])
	s, err := edwards25519.NewScalar().SetBytesWithClamping(h[:32])
	if err != nil {
		return sigs, err
	}
	prefix, public := h[32:], key[ed25519.SeedSize:]

	n := len(messages)
	rs := make([]edwards25519.Scalar, n)
	points := make([]edwards25519.Point, n)
	var digest [sha512.Size]byte
	for i, m := range messages {
		d := sha512.New()
		d.Write(prefix)
		d.Write(m)
		if _, err := rs[i].SetUniformBytes(d.Sum(digest[:0])); err != nil {
			return sigs, err
		}
		points[i].ScalarBaseMult(&rs[i])
	}
	encoded := encodeAll(points)

	var k, sc edwards25519.Scalar
	for i, m := range messages {
		d := sha512.New()
		d.Write(encoded[i][:])
		d.Write(public)
		d.Write(m)
		if _, err := k.SetUniformBytes(d.Sum(digest[:0])); err != nil {
			return sigs, err
		}
		sc.MultiplyAdd(&k, s, &rs[i])
		sig := make([]byte, 0, ed25519.SignatureSize)
		sig = append(sig, encoded[i][:]...)
		sigs = append(sigs, append(sig, sc.Bytes()...))
	}
	return sigs, nil
}

// encodeAll returns the 32-byte encodings of points (y, with the sign of x
// in the top bit), with one field inversion for all of them.
func encodeAll(points []edwards25519.Point) [][32]byte {
	n := len(points)
	out := make([][32]byte, n)
	if n == 0 {
		return out
	}
	// prefix[i] = Z_0 · … · Z_{i-1}; then walk back from the inverse of
	// the whole product, peeling one Z off at a time.
	prefix := make([]field.Element, n+1)
	prefix[0].One()
	for i := range points {
		_, _, z, _ := points[i].ExtendedCoordinates()
		prefix[i+1].Multiply(&prefix[i], z)
	}
	var inv, zInv, x, y field.Element
	inv.Invert(&prefix[n]) // Z's are never 0 for points on the curve
	for i := n - 1; i >= 0; i-- {
		X, Y, Z, _ := points[i].ExtendedCoordinates()
		zInv.Multiply(&inv, &prefix[i])
		inv.Multiply(&inv, Z)
		x.Multiply(X, &zInv)
		y.Multiply(Y, &zInv)
		copy(out[i][:], y.Bytes())
		out[i][31] |= byte(x.IsNegative()) << 7
	}
	return out
}
