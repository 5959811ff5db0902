package guard_test

import (
	"testing"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/signedtest"
)

// The costs of signed mode, next to the plain rule: a holder's repeated
// writes under one grant (cached) should cost about what unsigned checks
// cost; the first check of a grant pays one Ed25519 verification.
//
//	go test ./guard -run '^$' -bench . -benchmem

func BenchmarkCheckUnsigned(b *testing.B) {
	g := guard.New()
	for b.Loop() {
		if d, _ := g.Check("orders", 5); !d.Accepted {
			b.Fatal(d)
		}
	}
}

func BenchmarkCheckSignedCached(b *testing.B) {
	v, _ := guard.NewVerifier(signedtest.Public(signedtest.Old))
	g := guard.NewSigned(v)
	sig := signedtest.Sign(b, signedtest.Old, "orders", 5)
	for b.Loop() {
		if d, _ := g.CheckSigned("orders", 5, sig); !d.Accepted {
			b.Fatal(d)
		}
	}
}

// Every check a new grant: each pays the verification.
func BenchmarkCheckSignedFirst(b *testing.B) {
	v, _ := guard.NewVerifier(signedtest.Public(signedtest.Old))
	g := guard.NewSigned(v)
	const n = 1024
	sigs := make([]string, n)
	for i := range sigs {
		sigs[i] = signedtest.Sign(b, signedtest.Old, "orders", int64(i+1))
	}
	i := 0
	for b.Loop() {
		// Tokens climb, wrapping onto a fresh resource each lap.
		g2 := g
		if i%n == 0 {
			g2 = guard.NewSigned(v)
			g = g2
		}
		if d, _ := g2.CheckSigned("orders", int64(i%n+1), sigs[i%n]); !d.Accepted {
			b.Fatal(d)
		}
		i++
	}
}

// A forged signature: refused after trying every trusted key (one here).
func BenchmarkCheckSignedForged(b *testing.B) {
	v, _ := guard.NewVerifier(signedtest.Public(signedtest.Old))
	g := guard.NewSigned(v)
	sig := signedtest.Sign(b, signedtest.Other, "orders", 5)
	for b.Loop() {
		if d, _ := g.CheckSigned("orders", 5, sig); d.Accepted {
			b.Fatal(d)
		}
	}
}

// What an issuer pays per grant.
func BenchmarkSign(b *testing.B) {
	for b.Loop() {
		if _, err := guard.Sign(signedtest.Old, "orders", 5); err != nil {
			b.Fatal(err)
		}
	}
}
