package ed25519verify

import (
	"crypto/ed25519"
	"crypto/sha512"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/fenceview/fenceview/internal/third_party/ref10"
	generic "github.com/fenceview/fenceview/internal/third_party/sha512"
)

func TestSHA512MatchesStandardLibrary(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= 600; n++ {
		msg := make([]byte, n)
		for i := range msg {
			msg[i] = byte(r.Uint32())
		}
		want := sha512.Sum512(msg)
		// Split the input at an arbitrary point: writes of any size must
		// give the same digest.
		cut := 0
		if n > 0 {
			cut = r.IntN(n)
		}
		if got := generic.Sum512(msg[:cut], msg[cut:]); got != want {
			t.Fatalf("sha512 of %d bytes (cut at %d) = %x, want %x", n, cut, got, want)
		}
	}
}

// agree fails the test unless crypto/ed25519.Verify, PublicKey.Verify and
// the WebAssembly build's verifier (the tables over ref10's arithmetic)
// give the same answer, and returns it.
func agree(t *testing.T, what string, pub, msg, sig []byte) bool {
	t.Helper()
	want := len(pub) == ed25519.PublicKeySize && ed25519.Verify(pub, msg, sig)
	if len(pub) != PublicKeySize {
		return want // a PublicKey is 32 bytes by its type
	}
	k := NewPublicKey((*[PublicKeySize]byte)(pub))
	if got := k.Verify(msg, sig); got != want {
		t.Fatalf("%s: Verify = %v, crypto/ed25519 says %v (pub %x sig %x msg %q)", what, got, want, pub, sig, msg)
	}
	if k.table == nil {
		k.prepareTable()
	}
	if got := k.verifyTable(msg, sig); got != want {
		t.Fatalf("%s: the WebAssembly verifier says %v, crypto/ed25519 says %v (pub %x sig %x msg %q)", what, got, want, pub, sig, msg)
	}
	return want
}

func TestVerifyAgreesWithStandardLibrary(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	seed := make([]byte, ed25519.SeedSize)
	for i := 0; i < 200; i++ {
		for j := range seed {
			seed[j] = byte(r.Uint32())
		}
		priv := ed25519.NewKeyFromSeed(seed)
		pub := priv.Public().(ed25519.PublicKey)
		msg := []byte("fenceview/v1 orders/" + string(rune('a'+i%26)) + " 42")
		sig := ed25519.Sign(priv, msg)
		if !agree(t, "valid", pub, msg, sig) {
			t.Fatal("a valid signature does not verify")
		}
		// One flipped bit anywhere: in the signature, the key, the message.
		for _, target := range [][]byte{sig, pub, msg} {
			k := r.IntN(len(target) * 8)
			target[k/8] ^= 1 << (k % 8)
			if agree(t, "flipped bit", pub, msg, sig) {
				t.Fatal("a corrupted input verifies")
			}
			target[k/8] ^= 1 << (k % 8)
		}
		// Truncated and extended signatures and keys.
		agree(t, "short sig", pub, msg, sig[:63])
		agree(t, "long sig", pub, msg, append(sig[:64:64], 0))
		agree(t, "short key", pub[:31], msg, sig)
		agree(t, "empty", nil, msg, nil)
		// Random garbage of the right sizes (keys mostly not on the curve).
		junkPub, junkSig := make([]byte, 32), make([]byte, 64)
		for j := range junkPub {
			junkPub[j] = byte(r.Uint32())
		}
		for j := range junkSig {
			junkSig[j] = byte(r.Uint32())
		}
		agree(t, "random key", junkPub, msg, sig)
		agree(t, "random sig", pub, msg, junkSig)
	}
}

// S + L (the group order) is the same scalar in a non-canonical encoding:
// RFC 8032 and crypto/ed25519 refuse it (signature malleability).
func TestNonCanonicalSIsRefused(t *testing.T) {
	pub, msg, sig := signedByZeroKey("fenceview/v1 a 1")
	l, _ := new(big.Int).SetString("7237005577332262213973186563042994240857116359379907606001950938285454250989", 10)
	le := func(b []byte) *big.Int { // little-endian bytes to big.Int
		r := make([]byte, len(b))
		for i := range b {
			r[len(b)-1-i] = b[i]
		}
		return new(big.Int).SetBytes(r)
	}
	s := new(big.Int).Add(le(sig[32:]), l)
	if s.BitLen() > 253 { // sig[63]&224 must stay clear for the scalar check to matter
		t.Skip("this S + L does not fit the encoding")
	}
	be := s.FillBytes(make([]byte, 32))
	forged := append([]byte(nil), sig[:32]...)
	for i := range be {
		forged = append(forged, be[31-i])
	}
	if agree(t, "S+L", pub, msg, forged) {
		t.Fatal("a non-canonical S verifies")
	}
}

func FuzzVerify(f *testing.F) {
	pub, msg, sig := signedByZeroKey("m")
	f.Add(pub, msg, sig)
	f.Add(make([]byte, 32), []byte{}, make([]byte, 64))
	// Wycheproof's cases seed the fuzzer with the edge cases verifiers got
	// wrong: S past the order, non-canonical points, small orders.
	for _, c := range wycheproofCases(f) {
		f.Add(c.Key, c.Msg, c.Sig)
	}
	f.Fuzz(func(t *testing.T, pub, msg, sig []byte) {
		agree(t, "fuzz", pub, msg, sig)
	})
}

func BenchmarkVerify(b *testing.B) {
	pub, msg, sig := signedByZeroKey("fenceview/v1 orders/shard-0042 1847")
	k := NewPublicKey((*[PublicKeySize]byte)(pub))
	b.Run("PublicKey", func(b *testing.B) {
		for b.Loop() {
			k.Verify(msg, sig)
		}
	})
	b.Run("tables", func(b *testing.B) {
		k := NewPublicKey((*[PublicKeySize]byte)(pub))
		k.prepareTable()
		for b.Loop() {
			k.verifyTable(msg, sig)
		}
	})
	b.Run("crypto-ed25519", func(b *testing.B) {
		for b.Loop() {
			ed25519.Verify(pub, msg, sig)
		}
	})
	b.Run("prepare-tables", func(b *testing.B) {
		for b.Loop() {
			k := NewPublicKey((*[PublicKeySize]byte)(pub))
			k.prepareTable()
		}
	})
}

// The base point's table is ref10's constants; building it from B must
// give the same elements (so the builder that makes every key's table is
// right too, and the constants were copied right).
func TestBaseTable(t *testing.T) {
	var B ref10.ExtendedGroupElement
	enc := [32]byte{0x58, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
		0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66}
	if !B.FromBytes(&enc) {
		t.Fatal("the base point does not decode")
	}
	var built fixedBaseTable
	built.build(&B)
	for j := range built {
		for i := range built[j] {
			for f, pair := range [][2]*ref10.FieldElement{
				{&built[j][i].YPlusX, &ref10.BaseTable[j][i].YPlusX},
				{&built[j][i].YMinusX, &ref10.BaseTable[j][i].YMinusX},
				{&built[j][i].XY2d, &ref10.BaseTable[j][i].XY2d},
			} {
				var a, b [32]byte
				ref10.FeToBytes(&a, pair[0])
				ref10.FeToBytes(&b, pair[1])
				if a != b {
					t.Fatalf("table[%d][%d] field %d: built %x, ref10 %x", j, i, f, a, b)
				}
			}
		}
	}
}

// signedByZeroKey is the public key of the all-zero seed, msg, and its
// signature of msg.
func signedByZeroKey(msg string) (pub, m, sig []byte) {
	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	return priv.Public().(ed25519.PublicKey), []byte(msg), ed25519.Sign(priv, []byte(msg))
}
