package issuer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/clock"
	"github.com/fenceview/fenceview/internal/signedtest"
)

type fixedSigner struct{}

func (fixedSigner) Sign(resourceID string, token int64, shared bool) (string, string, error) {
	sigs, err := guard.SignGrants(signedtest.Old, []string{resourceID}, []int64{token}, []bool{shared})
	if err != nil {
		return "", "", err
	}
	return "old", sigs[0], nil
}

// newSignedService is a service on a real SQLite file that signs with
// signedtest.Old and checks with v.
func newSignedService(t *testing.T, v *guard.Verifier, require bool) *Service {
	t.Helper()
	s := New(openDB(t), nil, 0, Config{Issuer: "test-issuer", Clock: clock.NewFake(t0), SweepInterval: time.Hour,
		Signer: fixedSigner{}, Verifier: v, RequireSignatures: require})
	t.Cleanup(s.Close)
	return s
}

// The server's own fence with --require-signatures answers the signed table
// like every other guard.
func TestFenceRequireSignaturesTable(t *testing.T) {
	v := &guard.Verifier{}
	s := newSignedService(t, v, true)
	signedtest.Run(t, v, func(r string, tok int64, sig string) (guard.Decision, error) {
		return s.Fence(context.Background(), fenceview.Fence{ResourceID: r, Token: guard.Token{Token: tok, Signature: sig}, Source: "test"})
	}, signedtest.Options{})
	// Every refusal is in the history with its reason.
	if res, _ := s.Resource("orders"); res.Rejected == 0 || res.HighWaterMark != 9 {
		t.Fatalf("orders after the table: %+v", res)
	}
}

// Grants carry the key id and the signature of their own token; renewals
// carry the same signature.
func TestGrantsAreSigned(t *testing.T) {
	v, _ := guard.NewVerifier(signedtest.Public(signedtest.Old))
	s := newSignedService(t, v, true)
	ctx := context.Background()
	g, err := s.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "orders", Holder: "a", Lease: time.Minute, Wait: 0})
	if err != nil {
		t.Fatal(err)
	}
	if g.Fencing.KeyID != "old" || !v.VerifyText("orders", g.Fencing.Token, g.Fencing.Signature) {
		t.Fatalf("grant %+v does not carry a valid signature", g.Fencing)
	}
	r, err := s.Renew(ctx, "orders", "a", 0)
	if err != nil || r.Fencing.Signature != g.Fencing.Signature {
		t.Fatalf("renewal %+v, %v", r.Fencing, err)
	}
	// The signed grant passes the server's own fence; the bare number not.
	if d, _ := s.Fence(ctx, fenceview.Fence{ResourceID: "orders", Token: g.Fencing, Source: "t"}); !d.Accepted {
		t.Fatalf("signed grant refused: %+v", d)
	}
	if d, _ := s.Fence(ctx, fenceview.Fence{ResourceID: "orders", Token: guard.Token{Token: g.Fencing.Token}, Source: "t"}); d.Reason != guard.ReasonBadSignature {
		t.Fatalf("unsigned token: %+v", d)
	}
}

// Without --require-signatures the fence keeps the plain rule.
func TestFenceWithoutRequireIgnoresSignatures(t *testing.T) {
	v, _ := guard.NewVerifier(signedtest.Public(signedtest.Old))
	s := newSignedService(t, v, false)
	if d, _ := s.Fence(context.Background(), fenceview.Fence{ResourceID: "r", Token: guard.Token{Token: 3}, Source: "t"}); !d.Accepted {
		t.Fatalf("unsigned token refused without --require-signatures: %+v", d)
	}
}

// A report's signature is checked by the issuer; only a valid one of its
// keys for that resource and token counts as proof.
func TestReportsAreProven(t *testing.T) {
	v, _ := guard.NewVerifier(signedtest.Public(signedtest.Old))
	s := newSignedService(t, v, false)
	in := []fenceview.Report{
		{ResourceID: "r", Token: 7, Accepted: true, Source: "p", Signature: signedtest.Sign(t, signedtest.Old, "r", 7)},
		{ResourceID: "r", Token: 8, Accepted: true, Source: "p", Signature: signedtest.Sign(t, signedtest.Old, "r", 7)},
		{ResourceID: "r", Token: 7, Accepted: true, Source: "p", Signature: signedtest.Sign(t, signedtest.Other, "r", 7)},
		{ResourceID: "q", Token: 7, Accepted: true, Source: "p", Signature: signedtest.Sign(t, signedtest.Old, "r", 7)},
		{ResourceID: "r", Token: 7, Accepted: true, Source: "p"},
		{ResourceID: "r", Token: 7, Accepted: true, Source: "p", Proven: true}, // input cannot claim proof
	}
	out := s.verifyReports(in)
	want := []bool{true, false, false, false, false, false}
	for i := range out {
		if out[i].Proven != want[i] {
			t.Errorf("report %d: proven %v, want %v", i, out[i].Proven, want[i])
		}
	}
	if in[0].Proven || !in[5].Proven {
		t.Error("verifyReports changed its caller's slice")
	}
}

// A waiter's grant is made in another caller's change; it is signed too.
func TestWaiterGrantIsSigned(t *testing.T) {
	v, _ := guard.NewVerifier(signedtest.Public(signedtest.Old))
	s := newSignedService(t, v, false)
	ctx := context.Background()
	if _, err := s.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: "a", Lease: time.Minute, Wait: 0}); err != nil {
		t.Fatal(err)
	}
	got := queueGrant(t, s, fenceview.AcquireRequest{ResourceID: "r", Holder: "b", Lease: time.Minute, Wait: time.Minute})
	if _, err := s.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	g := <-got
	if g.Holder != "b" || !v.VerifyText("r", g.Fencing.Token, g.Fencing.Signature) {
		t.Fatalf("waiter's grant %+v is not signed", g.Fencing)
	}
}

// batchSigner signs with signedtest.Old through guard.SignBatch, or fails
// every batch when broken, and counts the grants it was asked to batch.
type batchSigner struct {
	fixedSigner
	broken  bool
	batched atomic.Int64
}

func (b *batchSigner) SignBatch(ids []string, tokens []int64, shared []bool) (string, []string, error) {
	b.batched.Add(int64(len(ids)))
	if b.broken {
		return "", nil, errors.New("broken")
	}
	sigs, err := guard.SignGrants(signedtest.Old, ids, tokens, shared)
	return "old", sigs, err
}

// Concurrent grants are signed with their group, in one batch: every
// grant's carrier verifies for its own resource and token. A signer whose
// batches fail still gets every grant signed, one by one.
func TestGroupGrantsAreSignedTogether(t *testing.T) {
	for _, broken := range []bool{false, true} {
		t.Run(fmt.Sprintf("broken=%v", broken), func(t *testing.T) {
			ctx := context.Background()
			signer := &batchSigner{broken: broken}
			v, _ := guard.NewVerifier(signedtest.Public(signedtest.Old))
			s := New(openDB(t), nil, 0, Config{Issuer: "test-issuer", Clock: clock.NewFake(t0), SweepInterval: time.Hour, Signer: signer})
			defer s.Close()
			var wg sync.WaitGroup
			grants := make([]fenceview.Grant, 32)
			errs := make([]error, len(grants))
			for i := range grants {
				wg.Add(1)
				go func() {
					defer wg.Done()
					grants[i], errs[i] = s.Acquire(ctx, fenceview.AcquireRequest{ResourceID: fmt.Sprintf("orders-%d", i), Holder: "a", Lease: time.Minute, Wait: 0})
				}()
			}
			wg.Wait()
			for i, g := range grants {
				if errs[i] != nil {
					t.Fatal(errs[i])
				}
				if g.Fencing.KeyID != "old" || !v.VerifyText(g.ResourceID, g.Fencing.Token, g.Fencing.Signature) {
					t.Fatalf("grant %s/%d signed %q by %q: does not verify", g.ResourceID, g.Fencing.Token, g.Fencing.Signature, g.Fencing.KeyID)
				}
			}
			if signer.batched.Load() != int64(len(grants)) {
				t.Fatalf("%d grants went through SignBatch, want all %d", signer.batched.Load(), len(grants))
			}
		})
	}
}

// The server's fence with --require-signatures answers the reads table
// like every other guard.
func TestFenceRequireSignaturesReads(t *testing.T) {
	v, _ := guard.NewVerifier(signedtest.Public(signedtest.New))
	s := newSignedService(t, v, true)
	fence := func(access string) signedtest.Checker {
		return func(r string, tok int64, sig string) (guard.Decision, error) {
			return s.Fence(context.Background(), fenceview.Fence{ResourceID: r, Token: guard.Token{Token: tok, Signature: sig}, Access: access, Source: "test"})
		}
	}
	signedtest.RunReads(t, fence(fenceview.AccessRead), fence(fenceview.AccessWrite), signedtest.Options{})
}
