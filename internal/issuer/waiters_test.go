package issuer

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/clock"
	"github.com/fenceview/fenceview/internal/sqlite"
)

// answered is a waiter's answer. A waiter that is never answered fails
// the test: the bound is a hang guard, not a timing threshold.
func answered[T any](t *testing.T, ch chan result[T]) result[T] {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter was never answered: lost from its queue")
		panic("unreachable")
	}
}

// waitingNow is the number of acquires the service counts as waiting
// (what --max-waiters bounds).
func waitingNow(s *Service) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting
}

// waitForPermit queues holder on the semaphore "jobs" of permits slots.
func waitForPermit(t *testing.T, s *Service, holder string, permits int) chan result[fenceview.Grant] {
	t.Helper()
	return queue(t, s, func() (fenceview.Grant, error) {
		return s.AcquirePermit(ctx, fenceview.PermitRequest{Semaphore: "jobs", Holder: holder, Permits: permits, Lease: time.Minute, Wait: time.Minute})
	})
}

func takePermitOf(t *testing.T, s *Service, holder string, permits int, lease time.Duration) fenceview.Grant {
	t.Helper()
	g, err := s.AcquirePermit(ctx, fenceview.PermitRequest{Semaphore: "jobs", Holder: holder, Permits: permits, Lease: lease})
	if err != nil {
		t.Fatalf("permit for %s: %v", holder, err)
	}
	return g
}

// A change that handed a semaphore's or a multi-lock's waiter a lock and
// was then refused took the waiter out of its queue and dropped its
// answer: it never answered, ignored its waitMs and kept its place under
// --max-waiters for ever. Each refusal below comes after a lease that ran
// out was handed on inside the refused change; the waiter must still be
// waiting, and be served by the sweep that records the expiry.
func TestWaiterOutlivesARefusedChange(t *testing.T) {
	for _, tc := range []struct {
		name   string
		refuse func(t *testing.T, h *harness)
	}{
		{"holder id refused", func(t *testing.T, h *harness) {
			// U+200B passes the holder check of the API, not ValidateNewID.
			_, err := h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "jobs#0", Holder: "x\u200b", Lease: time.Minute, Wait: time.Second})
			wantCode(t, err, fenceview.EINVALID)
		}},
		{"admin recover answering 409", func(t *testing.T, h *harness) {
			_, err := h.Recover(ctx, "jobs#0", 0)
			wantCode(t, err, fenceview.ECONFLICT)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			first := takePermitOf(t, h.Service, "a", 1, time.Second)
			waiting := waitForPermit(t, h.Service, "b", 1)
			h.clock.Advance(time.Second) // a's lease runs out, not yet swept
			tc.refuse(t, h)
			if n := waitingNow(h.Service); n != 1 {
				t.Fatalf("%d waiting after the refused change, want b still waiting", n)
			}
			h.Sweep(ctx)
			r := answered(t, waiting)
			if r.err != nil || r.v.Holder != "b" || r.v.ResourceID != "jobs#0" || r.v.Fencing.Token <= first.Fencing.Token {
				t.Fatalf("b after the sweep: %+v", r)
			}
			if n := waitingNow(h.Service); n != 0 {
				t.Fatalf("%d still counted as waiting", n)
			}
		})
	}
}

func TestMultiLockWaiterOutlivesARefusedChange(t *testing.T) {
	h := newHarness(t)
	acquire(t, h.Service, "x", "a", time.Second)
	waiting := queue(t, h.Service, func() ([]fenceview.Grant, error) {
		return h.AcquireAll(ctx, fenceview.AcquireAllRequest{ResourceIDs: []string{"x", "y"}, Holder: "m", Lease: time.Minute, Wait: time.Minute})
	})
	h.clock.Advance(time.Second)
	_, err := h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "x", Holder: "x\u200b", Lease: time.Minute, Wait: time.Second})
	wantCode(t, err, fenceview.EINVALID)
	h.Sweep(ctx)
	r := answered(t, waiting)
	if r.err != nil || len(r.v) != 2 || r.v[0].Holder != "m" {
		t.Fatalf("the multi-lock after the sweep: %+v", r)
	}
	if n := waitingNow(h.Service); n != 0 {
		t.Fatalf("%d still counted as waiting", n)
	}
}

// freeSlot meeting --max-resources refused a newcomer after the expiry it
// recorded had handed a slot to the waiter.
func TestPermitWaiterOutlivesTheResourceLimit(t *testing.T) {
	fake := clock.NewFake(t0)
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "fenceview.db"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, db, Config{Issuer: "test-issuer", Clock: fake, SweepInterval: time.Hour, MaxResources: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); db.Close() })
	takePermitOf(t, s, "a", 2, time.Second) // jobs#0
	takePermitOf(t, s, "c", 2, time.Minute) // jobs#1: the server's two resources
	waiting := waitForPermit(t, s, "b", 2)
	if _, err := s.SetPermits(ctx, "jobs", 3); err != nil { // jobs#2 would be one resource too many
		t.Fatal(err)
	}
	fake.Advance(time.Second)
	_, err = s.AcquirePermit(ctx, fenceview.PermitRequest{Semaphore: "jobs", Holder: "n", Permits: 3, Lease: time.Minute})
	wantCode(t, err, fenceview.ELIMIT)
	s.Sweep(ctx)
	if r := answered(t, waiting); r.err != nil || r.v.Holder != "b" || r.v.ResourceID != "jobs#0" {
		t.Fatalf("b after the sweep: %+v", r)
	}
	if n := waitingNow(s); n != 0 {
		t.Fatalf("%d still counted as waiting", n)
	}
}

// A lock whose tokens run out while a waiter waits cannot be handed to it:
// the waiter is told so at once, instead of being taken out of the queue
// and never answered.
func TestWaiterOfAnExhaustedLockIsAnswered(t *testing.T) {
	h := newHarness(t)
	if _, err := h.ResetCounter(ctx, "r", fenceview.MaxIssued-1); err != nil {
		t.Fatal(err)
	}
	if g := acquire(t, h.Service, "r", "a", time.Minute); g.Fencing.Token != fenceview.MaxIssued {
		t.Fatalf("the last token: %d", g.Fencing.Token)
	}
	waiting := queue(t, h.Service, func() (fenceview.Grant, error) {
		return h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: "b", Lease: time.Minute, Wait: time.Minute})
	})
	if _, err := h.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	r := answered(t, waiting)
	wantCode(t, r.err, fenceview.EEXHAUSTED)
	if !strings.Contains(fenceview.ErrorMessage(r.err), "exhausted") {
		t.Fatalf("b's answer: %v", r.err)
	}
	if n := waitingNow(h.Service); n != 0 {
		t.Fatalf("%d still counted as waiting", n)
	}
}

// A slot whose tokens are exhausted (a fence of 2^63-1 on it before its
// first grant, say) is passed over: the semaphore serves from its other
// slots, newcomers and waiters alike.
func TestSemaphoreSkipsAnExhaustedSlot(t *testing.T) {
	h := newHarness(t)
	if _, err := h.SetPermits(ctx, "jobs", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ResetCounter(ctx, "jobs#0", fenceview.MaxIssued-1); err != nil {
		t.Fatal(err)
	}
	if g := takePermitOf(t, h.Service, "a", 2, time.Minute); g.ResourceID != "jobs#0" {
		t.Fatalf("a: %+v", g) // the slot's last token
	}
	if _, err := h.ReleasePermit(ctx, "jobs", "a", 0); err != nil {
		t.Fatal(err)
	}
	if g := takePermitOf(t, h.Service, "b", 2, time.Minute); g.ResourceID != "jobs#1" {
		t.Fatalf("b got %s, want jobs#1 past the exhausted jobs#0", g.ResourceID)
	}
	if sem, _ := h.Semaphore("jobs"); sem.Free != 0 {
		t.Fatalf("the exhausted slot counted free: %+v", sem)
	}
	waiting := waitForPermit(t, h.Service, "c", 2)
	if _, err := h.ReleasePermit(ctx, "jobs", "b", 1); err != nil {
		t.Fatal(err)
	}
	if r := answered(t, waiting); r.err != nil || r.v.ResourceID != "jobs#1" {
		t.Fatalf("c: %+v", r)
	}
}

// A semaphore's waiter was taken out of the queue when the slot released
// to it had no token left, and never answered. It now waits on for
// another slot, and is answered at its deadline like any waiter.
func TestPermitWaiterOfAnExhaustedSlotIsAnsweredAtItsDeadline(t *testing.T) {
	h := newHarness(t)
	if _, err := h.ResetCounter(ctx, "jobs#0", fenceview.MaxIssued-1); err != nil {
		t.Fatal(err)
	}
	takePermitOf(t, h.Service, "a", 1, time.Minute) // the slot's last token
	waiting := waitForPermit(t, h.Service, "b", 1)
	if _, err := h.ReleasePermit(ctx, "jobs", "a", 0); err != nil {
		t.Fatal(err)
	}
	if n := waitingNow(h.Service); n != 1 {
		t.Fatalf("%d waiting after the release, want b still waiting", n)
	}
	h.clock.Advance(time.Minute) // b's wait
	r := answered(t, waiting)
	if f := conflict(t, r.err, "no permit free"); f["permits"] != 1 {
		t.Fatalf("b's answer: %v", r.err)
	}
	if n := waitingNow(h.Service); n != 0 {
		t.Fatalf("%d still counted as waiting", n)
	}
}
