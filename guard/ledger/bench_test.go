package ledger_test

import (
	"testing"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/ledger"
	"github.com/fenceview/fenceview/internal/signedtest"
)

// The bare ledger, as a single-threaded host (the WebAssembly guest) runs
// it: guard.Guard's checks cost this plus a mutex.
//
//	go test ./guard/ledger -run '^$' -bench . -benchmem

func BenchmarkLedgerCheckUnsigned(b *testing.B) {
	var l ledger.Ledger
	for b.Loop() {
		if r, _ := l.Check("orders", 5); !r.Accepted {
			b.Fatal(r)
		}
	}
}

// A remembered verification, the text form, as guard.Guard looks it up.
func BenchmarkLedgerCheckSignedCached(b *testing.B) {
	v, _ := guard.NewVerifier(signedtest.Public(signedtest.Old))
	var l ledger.Ledger
	l.UseVerifier(v)
	sig := signedtest.Sign(b, signedtest.Old, "orders", 5)
	raw, _ := guard.DecodeSignature(sig)
	if _, done, _ := l.Recall("orders", 5, sig, nil, false); done {
		b.Fatal("nothing verified yet")
	}
	l.Verified("orders", 5, raw[:], sig, v.Generation(), ledger.Exclusive, false)
	for b.Loop() {
		if r, done, _ := l.Recall("orders", 5, sig, nil, false); !done || !r.Accepted {
			b.Fatal(r)
		}
	}
}

func BenchmarkLedgerCheckSignedBytesCached(b *testing.B) {
	v, _ := guard.NewVerifier(signedtest.Public(signedtest.Old))
	var l ledger.Ledger
	l.UseVerifier(v)
	raw, _ := guard.DecodeSignature(signedtest.Sign(b, signedtest.Old, "orders", 5))
	for b.Loop() {
		if r, _ := l.CheckSigned("orders", 5, raw[:]); !r.Accepted {
			b.Fatal(r)
		}
	}
}
