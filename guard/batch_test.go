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

// rfcRoot is the root that a raw carrier's proof leads to from message,
// walked top-down by the RFC's split (nil when the path does not fit the
// index and size): what a verifier that did not bind the size would trust.
func rfcRoot(raw, message []byte) []byte {
	index, size := int(binary.BigEndian.Uint32(raw[65:])), int(binary.BigEndian.Uint32(raw[69:]))
	path := raw[73:]
	var walk func(lo, hi int, path []byte) []byte
	walk = func(lo, hi int, path []byte) []byte {
		if hi-lo == 1 {
			if len(path) != 0 {
				return nil
			}
			s := sha256.Sum256(append([]byte{0x00}, message...))
			return s[:]
		}
		if len(path) < 32 {
			return nil
		}
		k, last, rest := largestPowerOfTwoBelow(hi-lo), path[len(path)-32:], path[:len(path)-32]
		var s [32]byte
		if index < lo+k {
			r := walk(lo, lo+k, rest)
			if r == nil {
				return nil
			}
			s = sha256.Sum256(append(append([]byte{0x01}, r...), last...))
		} else {
			r := walk(lo+k, hi, rest)
			if r == nil {
				return nil
			}
			s = sha256.Sum256(append(append([]byte{0x01}, last...), r...))
		}
		return s[:]
	}
	if index >= size {
		return nil
	}
	return walk(0, size, path)
}

func largestPowerOfTwoBelow(n int) int {
	k := 1
	for k*2 < n {
		k *= 2
	}
	return k
}

// Every grant of every batch size from 1 to 70, its leaves shared and
// exclusive in turn, carries exactly the RFC's proof: version 2, one
// signature of "fenceview/batch/v2 <n> <hex MTH>" by the key, its index,
// the size and PATH(index), all computed here from the RFC's definitions
// and the messages written out by hand; and every Go verifier accepts each
// grant for its own resource, token and mode only: a shared grant's token
// never passes for a write, a rewritten size and a 0x01 carrier never at
// all.
func TestSignBatchProofsAreRFC9162(t *testing.T) {
	key := signedtest.New
	pub := signedtest.Public(key)
	rewrittenSizes := 0
	for n := 1; n <= 70; n++ {
		ids, tokens, msgs, shared := make([]string, n), make([]int64, n), make([][]byte, n), make([]bool, n)
		for i := range ids {
			ids[i], tokens[i], shared[i] = fmt.Sprintf("res %d ü", i), int64(1000+i*7), (i+n)%3 == 0
			msgs[i] = []byte(fmt.Sprintf("fenceview/v1 %s %d", ids[i], tokens[i]))
			if shared[i] {
				msgs[i] = append(msgs[i], " shared"...)
			}
		}
		sigs, err := guard.SignGrants(key, ids, tokens, shared)
		if err != nil || len(sigs) != n {
			t.Fatalf("n=%d: %d carriers, %v", n, len(sigs), err)
		}
		root := rfcMTH(msgs)
		rootMsg := []byte(fmt.Sprintf("fenceview/batch/v2 %d %s", n, hex.EncodeToString(root)))
		v, _ := guard.NewVerifier(pub)
		g := guard.NewSigned(v)
		var sig0 []byte
		for i, text := range sigs {
			raw, err := guard.DecodeCarrier(text)
			if err != nil {
				t.Fatalf("n=%d i=%d: %v", n, i, err)
			}
			if raw[0] != 0x02 || binary.BigEndian.Uint32(raw[65:]) != uint32(i) || binary.BigEndian.Uint32(raw[69:]) != uint32(n) {
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
			if !v.VerifyTextGrant(ids[i], tokens[i], shared[i], text) || !v.VerifyGrant(ids[i], tokens[i], shared[i], raw) ||
				v.VerifyGrant(ids[i], tokens[i], !shared[i], raw) {
				t.Fatalf("n=%d i=%d shared=%v: the Verifier refuses it, or takes it for the other mode", n, i, shared[i])
			}
			if m := v.Mode(ids[i], tokens[i], raw, i%2 == 0); m != map[bool]guard.Mode{true: guard.Shared, false: guard.Exclusive}[shared[i]] {
				t.Fatalf("n=%d i=%d: mode %d", n, i, m)
			}
			d, err := g.CheckSigned(ids[i], tokens[i], text)
			if err != nil || d.Accepted == shared[i] || shared[i] && d.Reason != guard.ReasonSharedToken {
				t.Fatalf("n=%d i=%d shared=%v: the Guard's write: %+v %v", n, i, shared[i], d, err)
			}
			if d, err := g.CheckSignedRead(ids[i], tokens[i], text); err != nil || !d.Accepted {
				t.Fatalf("n=%d i=%d: the Guard's read: %+v %v", n, i, d, err)
			}
			other := (i + 1) % n
			if n > 1 && (v.VerifyTextGrant(ids[other], tokens[other], shared[i], text) || v.VerifyTextGrant(ids[i], tokens[i]+1, shared[i], text)) {
				t.Fatalf("n=%d i=%d: verifies for another grant", n, i)
			}
			// Other sizes that its path fits lead to the same root (the
			// RFC's recursion, run on the rewritten carrier, says which);
			// the signature binds the size, so none verifies, though the
			// root is cached by now. (The first of them: each costs an
			// Ed25519 verification.)
			for size, tried := uint32(i+1), 0; size <= uint32(2*n+2) && tried < 1; size++ {
				rewritten := bytes.Clone(raw)
				binary.BigEndian.PutUint32(rewritten[69:], size)
				if size == uint32(n) || !bytes.Equal(rfcRoot(rewritten, msgs[i]), root) {
					continue
				}
				if v.VerifyGrant(ids[i], tokens[i], shared[i], rewritten) {
					t.Fatalf("n=%d i=%d: verifies with its size rewritten to %d", n, i, size)
				}
				rewrittenSizes++
				tried++
			}
			old := bytes.Clone(raw)
			old[0] = 0x01
			if v.VerifyGrant(ids[i], tokens[i], shared[i], old) {
				t.Fatalf("n=%d i=%d: verifies as a version 1 carrier", n, i)
			}
		}
	}
	if rewrittenSizes == 0 {
		t.Fatal("no carrier's size could be rewritten to the same root: the attack is not reproduced")
	}
	t.Logf("%d rewritten sizes led to a signed root and were refused", rewrittenSizes)
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
	longest := guard.EncodeSignature(append([]byte{2}, make([]byte, guard.MaxCarrierSize-1)...))
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
	ids, tokens := benchBatch(n)
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
	ids, tokens := benchBatch(n)
	for b.Loop() {
		if _, err := guard.SignBatch(signedtest.New, ids, tokens); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/grant")
}

// A read with a writer's token of a batch whose root is verified: the
// shared message is tried first, and must not cost an Ed25519
// verification that fails.
func BenchmarkReadWithAnExclusiveToken(b *testing.B) {
	const n = 64
	ids, tokens := benchBatch(n)
	v, _ := guard.NewVerifier(signedtest.Public(signedtest.New))
	sigs, _ := guard.SignBatch(signedtest.New, ids, tokens)
	raw := make([][]byte, n)
	for i, s := range sigs {
		raw[i], _ = guard.DecodeCarrier(s)
	}
	v.Verify(ids[0], tokens[0], raw[0]) // the root, verified once
	i := 0
	for b.Loop() {
		if v.Mode(ids[i%n], tokens[i%n], raw[i%n], true) != guard.Exclusive {
			b.Fatal("not exclusive")
		}
		i++
	}
}

// benchBatch is a batch of n grants, one per resource, tokens 1 to n.
func benchBatch(n int) ([]string, []int64) {
	ids, tokens := make([]string, n), make([]int64, n)
	for i := range ids {
		ids[i], tokens[i] = fmt.Sprintf("bench-%d", i), int64(i+1)
	}
	return ids, tokens
}
