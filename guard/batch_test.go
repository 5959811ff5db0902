package guard_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/signedtest"
)

// RFC 9162 §2.1.1 and §2.1.3.1 as the RFC defines them, recursively over
// the leaves, with crypto/sha256: independent of internal/merkle, whose Tree
// SignBatch builds with and whose Root the verifiers use.
func rfcMTH(d [][]byte) []byte {
	switch n := len(d); n {
	case 0:
		s := sha256.Sum256(nil)
		return s[:]
	case 1:
		s := sha256.Sum256(append([]byte{0x00}, d[0]...))
		return s[:]
	default:
		k := largestPowerOfTwoBelow(n)
		s := sha256.Sum256(append(append([]byte{0x01}, rfcMTH(d[:k])...), rfcMTH(d[k:])...))
		return s[:]
	}
}

func rfcPATH(m int, d [][]byte) []byte {
	n := len(d)
	if n == 1 {
		return nil
	}
	k := largestPowerOfTwoBelow(n)
	if m < k {
		return append(rfcPATH(m, d[:k]), rfcMTH(d[k:])...)
	}
	return append(rfcPATH(m-k, d[k:]), rfcMTH(d[:k])...)
}

func largestPowerOfTwoBelow(n int) int {
	k := 1
	for k*2 < n {
		k *= 2
	}
	return k
}

// Every grant of every batch size from 1 to 70 carries exactly the RFC's
// proof: version 1, one signature of "fenceview/batch/v1 <hex MTH>" by the
// key, its index, the size and PATH(index); and every Go verifier accepts
// each grant for its own resource and token only.
func TestSignBatchProofsAreRFC9162(t *testing.T) {
	key := signedtest.New
	pub := signedtest.Public(key)
	for n := 1; n <= 70; n++ {
		ids, tokens, msgs := make([]string, n), make([]int64, n), make([][]byte, n)
		for i := range ids {
			ids[i], tokens[i] = fmt.Sprintf("res %d ü", i), int64(1000+i*7)
			msgs[i] = guard.Message(ids[i], tokens[i])
		}
		sigs, err := guard.SignBatch(key, ids, tokens)
		if err != nil || len(sigs) != n {
			t.Fatalf("n=%d: %d carriers, %v", n, len(sigs), err)
		}
		root := rfcMTH(msgs)
		rootMsg := []byte("fenceview/batch/v1 " + hex.EncodeToString(root))
		v, _ := guard.NewVerifier(pub)
		g := guard.NewSigned(v)
		var sig0 []byte
		for i, text := range sigs {
			raw, err := guard.DecodeCarrier(text)
			if err != nil {
				t.Fatalf("n=%d i=%d: %v", n, i, err)
			}
			if raw[0] != 0x01 || binary.BigEndian.Uint32(raw[65:]) != uint32(i) || binary.BigEndian.Uint32(raw[69:]) != uint32(n) {
				t.Fatalf("n=%d i=%d: header %x", n, i, raw[:73])
			}
			if !bytes.Equal(raw[73:], rfcPATH(i, msgs)) {
				t.Fatalf("n=%d i=%d: path %x, RFC 9162 PATH %x", n, i, raw[73:], rfcPATH(i, msgs))
			}
			if !ed25519.Verify(pub, rootMsg, raw[1:65]) {
				t.Fatalf("n=%d i=%d: the signature is not over %q", n, i, rootMsg)
			}
			if sig0 == nil {
				sig0 = raw[1:65]
			} else if !bytes.Equal(sig0, raw[1:65]) {
				t.Fatalf("n=%d i=%d: more than one signature in a batch", n, i)
			}
			if !v.VerifyText(ids[i], tokens[i], text) || !v.Verify(ids[i], tokens[i], raw) {
				t.Fatalf("n=%d i=%d: the Verifier refuses it", n, i)
			}
			if d, err := g.CheckSigned(ids[i], tokens[i], text); err != nil || !d.Accepted {
				t.Fatalf("n=%d i=%d: the Guard refuses it: %+v %v", n, i, d, err)
			}
			other := (i + 1) % n
			if n > 1 && (v.VerifyText(ids[other], tokens[other], text) || v.VerifyText(ids[i], tokens[i]+1, text)) {
				t.Fatalf("n=%d i=%d: verifies for another grant", n, i)
			}
		}
	}
}

// SignBatch refuses what Sign refuses, for the whole batch.
func TestSignBatchRefusesBadInput(t *testing.T) {
	for name, c := range map[string]struct {
		ids    []string
		tokens []int64
	}{
		"empty": {}, "lengths differ": {[]string{"a"}, []int64{1, 2}},
		"a bad id": {[]string{"a", ""}, []int64{1, 2}}, "a bad token": {[]string{"a", "b"}, []int64{1, 0}},
	} {
		if _, err := guard.SignBatch(signedtest.New, c.ids, c.tokens); err == nil {
			t.Errorf("%s: signed", name)
		}
	}
	if _, err := guard.SignBatch(ed25519.PrivateKey{1}, []string{"a"}, []int64{1}); err == nil {
		t.Error("a short key signed")
	}
}

// DecodeCarrier takes the canonical text of 64 bytes or of a batch carrier
// within MaxCarrierTextSize, and nothing else.
func TestDecodeCarrier(t *testing.T) {
	one := signedtest.SignBatch(t, signedtest.New, []string{"a"}, []int64{1})[0]
	if raw, err := guard.DecodeCarrier(one); err != nil || len(raw) != 73 || len(one) != 98 {
		t.Fatalf("a batch of one: %d characters, %d bytes, %v", len(one), len(raw), err)
	}
	v2 := signedtest.Sign(t, signedtest.New, "a", 1)
	if raw, err := guard.DecodeCarrier(v2); err != nil || len(raw) != 64 {
		t.Fatalf("a signature of one token: %v", err)
	}
	longest := guard.EncodeSignature(append([]byte{1}, make([]byte, guard.MaxCarrierSize-1)...))
	if len(longest) != guard.MaxCarrierTextSize {
		t.Fatalf("the longest carrier is %d characters, MaxCarrierTextSize %d", len(longest), guard.MaxCarrierTextSize)
	}
	if _, err := guard.DecodeCarrier(longest); err != nil {
		t.Fatalf("the longest carrier: %v", err)
	}
	for name, s := range map[string]string{
		"too long":        guard.EncodeSignature(make([]byte, guard.MaxCarrierSize+32)),
		"half a hash":     guard.EncodeSignature(make([]byte, 73+16)),
		"72 bytes":        guard.EncodeSignature(make([]byte, 72)),
		"padded":          one + "==",
		"a line break":    one[:40] + "\n" + one[40:],
		"std alphabet":    guard.EncodeSignature(bytes.Repeat([]byte{0xfb}, 73))[:97] + "+",
		"unused bits set": one[:97] + string(one[97]+1),
	} {
		if _, err := guard.DecodeCarrier(s); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

// A batch's grants, checked in turn by one guard: the first costs one
// Ed25519 verification, the others hashing (the root is cached).
func BenchmarkCheckSignedBatch(b *testing.B) {
	const n = 64
	ids, tokens := make([]string, n), make([]int64, n)
	for i := range ids {
		ids[i], tokens[i] = fmt.Sprintf("bench-%d", i), int64(i+1)
	}
	v, _ := guard.NewVerifier(signedtest.Public(signedtest.New))
	i := 0
	var sigs []string
	for b.Loop() {
		if i%n == 0 {
			b.StopTimer()
			for j := range tokens {
				tokens[j] += n
			}
			sigs, _ = guard.SignBatch(signedtest.New, ids, tokens)
			b.StartTimer()
		}
		if !v.VerifyText(ids[i%n], tokens[i%n], sigs[i%n]) {
			b.Fatal("refused")
		}
		i++
	}
}

// Signing a group commit's grants: per grant, a batch of 64.
func BenchmarkSignBatch64(b *testing.B) {
	const n = 64
	ids, tokens := make([]string, n), make([]int64, n)
	for i := range ids {
		ids[i], tokens[i] = fmt.Sprintf("bench-%d", i), int64(i+1)
	}
	for b.Loop() {
		if _, err := guard.SignBatch(signedtest.New, ids, tokens); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/grant")
}
