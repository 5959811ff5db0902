package issuer

import (
	"testing"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
)

// answer is what a Then operation was told.
type answer struct {
	grant    fenceview.Grant
	decision guard.Decision
	left     int
	err      error
}

// A change made through a Then operation is answered once it is durable,
// by the goroutine that delivers its commit, with what its twin returns.
func TestThenAnswersOnceDurable(t *testing.T) {
	store := &gatedStore{DB: openDB(t), applying: make(chan int), proceed: make(chan struct{})}
	s, _ := newOnStore(store)
	defer s.Close()
	told := make(chan answer, 1)
	s.AcquireThen(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: "a", Lease: time.Minute},
		func(g fenceview.Grant, err error) { told <- answer{grant: g, err: err} })
	if n := <-store.applying; n != 1 {
		t.Fatalf("the commit carries %d events, want the grant's 1", n)
	}
	select {
	case a := <-told:
		t.Fatalf("answered before the grant was durable: %+v", a)
	default:
	}
	store.proceed <- struct{}{}
	a := <-told
	if a.err != nil || a.grant.Fencing.Token != 1 || a.grant.Holder != "a" {
		t.Fatalf("the grant: %+v", a)
	}
	if ls, _ := s.Lock("r"); !ls.Locked || ls.Holder != "a" {
		t.Fatalf("after the answer the lock reads %+v, want held by a", ls)
	}

	s.FenceThen(ctx, fenceview.Fence{ResourceID: "r", Token: guard.Token{Token: 1}},
		func(d guard.Decision, err error) { told <- answer{decision: d, err: err} })
	<-store.applying
	store.proceed <- struct{}{}
	if a := <-told; a.err != nil || !a.decision.Accepted || a.decision.Presented != 1 {
		t.Fatalf("the fence: %+v", a)
	}
	s.RenewThen(ctx, "r", "a", 2*time.Minute, func(g fenceview.Grant, err error) { told <- answer{grant: g, err: err} })
	<-store.applying
	store.proceed <- struct{}{}
	if a := <-told; a.err != nil || a.grant.Fencing.Token != 1 || a.grant.LeaseMs != 120_000 {
		t.Fatalf("the renewal: %+v", a)
	}
	s.ReleaseThen(ctx, "r", "a", func(left int, err error) { told <- answer{left: left, err: err} })
	<-store.applying
	store.proceed <- struct{}{}
	if a := <-told; a.err != nil || a.left != 0 {
		t.Fatalf("the release: %+v", a)
	}
	if ls, _ := s.Lock("r"); ls.Locked {
		t.Fatalf("after the release the lock reads %+v", ls)
	}
}

// Input refused before anything is decided is answered at once, on the
// caller's goroutine.
func TestThenRefusesBadInputAtOnce(t *testing.T) {
	s, _ := newOnStore(openDB(t))
	defer s.Close()
	var got []error
	s.AcquireThen(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: ""}, func(_ fenceview.Grant, err error) { got = append(got, err) })
	s.FenceThen(ctx, fenceview.Fence{ResourceID: "r", Token: guard.Token{Token: -1}}, func(_ guard.Decision, err error) { got = append(got, err) })
	s.ReleaseThen(ctx, "", "a", func(_ int, err error) { got = append(got, err) })
	s.RenewThen(ctx, "r", "a", -time.Second, func(_ fenceview.Grant, err error) { got = append(got, err) })
	if len(got) != 4 {
		t.Fatalf("%d of 4 answered before returning", len(got))
	}
	for i, err := range got {
		if fenceview.ErrorCode(err) != fenceview.EINVALID {
			t.Fatalf("answer %d: %v, want invalid", i, err)
		}
	}
	if s.LastSeq() != 0 {
		t.Fatalf("bad input recorded %d events", s.LastSeq())
	}
}

// A refusal decided on a grant still being committed is answered once the
// grant's commit is over, and fails with it; a change whose commit fails
// is answered unavailable.
func TestThenRefusalWaitsForTheGrantItNames(t *testing.T) {
	h := holdGrant(t, func(s *Service, answer func(error)) {
		s.AcquireThen(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: "a", Lease: time.Minute},
			func(_ fenceview.Grant, err error) { answer(err) })
	})
	refused := make(chan error, 1)
	h.s.ReleaseThen(ctx, "r", "b", func(_ int, err error) { refused <- err })
	<-h.settling // b's refusal names a's grant, not yet durable
	h.failsWithTheGrant(t, refused)
}
