package client_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/client/fenceviewtest"
	"github.com/fenceview/fenceview/guard"
)

// outliveTwoLeases steps the clock through two lease lengths, a third of
// a lease at a time, and expects the watchdog to renew at every step.
func outliveTwoLeases(t *testing.T, srv *fenceviewtest.Server, events <-chan string) {
	t.Helper()
	renewals(t, srv, events, 6)
}

// renewals steps the clock a third of a lease n times and expects the
// watchdog to renew at every step and to be armed again after.
func renewals(t *testing.T, srv *fenceviewtest.Server, events <-chan string, n int) {
	t.Helper()
	for range n {
		expect(t, events, "armed")
		srv.Clock().Advance(lease / 3)
		expect(t, events, "renewed")
	}
	expect(t, events, "armed")
}

// forceLoss force-expires resource: the watchdog's next renewal is
// refused, and held, the context of the hold, ends with ErrLeaseLost and
// ErrLeaseExpired.
func forceLoss(t *testing.T, srv *fenceviewtest.Server, c *client.Client, events <-chan string, resource string, held context.Context) {
	t.Helper()
	if err := c.ForceExpire(context.Background(), resource); err != nil {
		t.Fatal(err)
	}
	srv.Clock().Advance(lease / 3)
	expect(t, events, "lost")
	if cause := context.Cause(held); !errors.Is(cause, client.ErrLeaseLost) || !errors.Is(cause, client.ErrLeaseExpired) {
		t.Fatalf("cause = %v", cause)
	}
}

// next receives the next leader change.
func next(t *testing.T, obs <-chan client.Leader) client.Leader {
	t.Helper()
	select {
	case l, ok := <-obs:
		if !ok {
			t.Fatal("the observation ended")
		}
		return l
	case <-time.After(30 * time.Second): // a hang guard, not a synchronisation
		t.Fatal("no leader change observed")
	}
	return client.Leader{}
}

// A lease granted with a lock-delay that runs out keeps the lock from
// everyone until the delay is over; the refusal says until when.
func TestMutexLockDelay(t *testing.T) {
	ctx := context.Background()
	srv, c := start(t, fenceviewtest.Config{})
	const delay = 2 * time.Second
	a := c.Mutex("printer", "a", client.WithLockDelay(delay))
	if _, err := a.TryLock(ctx, 0, lease); err != nil {
		t.Fatal(err)
	}
	st, err := a.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv.Clock().Advance(lease) // a stalls: its fixed lease runs out
	<-a.Done()

	for _, who := range []string{"b", "a"} { // the old holder too
		_, err := c.Mutex("printer", who).TryLock(ctx, 0, 0)
		var ld *client.LockDelayError
		if !errors.As(err, &ld) || !errors.Is(err, client.ErrLockDelay) || errors.Is(err, client.ErrHeld) {
			t.Fatalf("%s's TryLock in the delay = %v, want a LockDelayError", who, err)
		}
		if want := st.ExpiresAt.Add(delay); !ld.AvailableAt.Equal(want) || ld.Resource != "printer" {
			t.Fatalf("LockDelayError %+v, want available at %v", ld, want)
		}
	}
	srv.Clock().Advance(delay)
	b := c.Mutex("printer", "b")
	tb, err := b.TryLock(ctx, 0, 0)
	if err != nil || tb <= st.Token {
		t.Fatalf("b after the delay = %d, %v (a had %d)", tb, err, st.Token)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// A release frees a lock granted with a lock-delay at once.
func TestMutexLockDelayNotAfterRelease(t *testing.T) {
	ctx := context.Background()
	_, c := startWith(t, fenceviewtest.Config{}, client.Config{RPC: true})
	a := c.Mutex("printer", "a", client.WithLockDelay(time.Minute))
	if _, err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mutex("printer", "b").TryLock(ctx, 0, 0); err != nil {
		t.Fatalf("b after a's release = %v", err)
	}
}

func TestLockDelayOutOfRange(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, fenceviewtest.Config{})
	for _, d := range []time.Duration{-time.Millisecond, 60*time.Second + time.Millisecond, time.Microsecond} {
		if _, err := c.Mutex("r", "a", client.WithLockDelay(d)).TryLock(ctx, 0, 0); !errors.Is(err, client.ErrInvalid) {
			t.Errorf("lock-delay %v: %v, want ErrInvalid", d, err)
		}
		if _, err := c.Semaphore("s", 1, client.WithLockDelay(d)).TryAcquire(ctx, 0); !errors.Is(err, client.ErrInvalid) {
			t.Errorf("semaphore lock-delay %v: %v, want ErrInvalid", d, err)
		}
	}
	if st, _ := c.State(ctx, "r"); st.Token != 0 {
		t.Fatalf("a refused option sent an acquire: %+v", st)
	}
}

// Permits take the lowest free slots, each a lock with its own token; a
// full semaphore refuses with its permits, a mismatched count is refused,
// and a released slot is granted again with a larger token.
func TestSemaphoreSlots(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, fenceviewtest.Config{})
	sem := c.Semaphore("jobs", 2)
	p0, err := sem.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p1, err := sem.Acquire(ctx) // one holder, several permits
	if err != nil {
		t.Fatal(err)
	}
	if p0.Slot() != 0 || p1.Slot() != 1 || p0.Resource() != "jobs#0" || p1.Resource() != "jobs#1" {
		t.Fatalf("slots %d %q, %d %q", p0.Slot(), p0.Resource(), p1.Slot(), p1.Resource())
	}
	if p0.Token().Number <= 0 || p0.Token().Resource != "jobs#0" || p0.Fencing().Scope != "resource:jobs#0" || p0.Token().Signature == "" {
		t.Fatalf("permit token %+v fencing %+v", p0.Token(), p0.Fencing())
	}
	if isDone(p0.Context()) || isDone(p1.Context()) {
		t.Fatal("a permit's context is done while held")
	}

	_, err = c.Semaphore("jobs", 2).TryAcquire(ctx, 0)
	var full *client.NoPermitError
	if !errors.As(err, &full) || !errors.Is(err, client.ErrNoPermit) || full.Permits != 2 || full.Semaphore != "jobs" {
		t.Fatalf("TryAcquire of a full semaphore = %v", err)
	}
	_, err = c.Semaphore("jobs", 3).TryAcquire(ctx, 0)
	var mismatch *client.PermitsMismatchError
	if !errors.As(err, &mismatch) || !errors.Is(err, client.ErrPermitsMismatch) || mismatch.Permits != 2 || mismatch.Asked != 3 {
		t.Fatalf("TryAcquire with another count = %v", err)
	}

	st, err := sem.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "jobs" || st.Permits != 2 || st.Free != 0 || len(st.Held) != 2 ||
		st.Held[0].Resource != "jobs#0" || st.Held[0].Holder != c.Holder() || st.Held[0].Token != p0.Token().Number {
		t.Fatalf("state %+v", st)
	}

	old := p0.Token()
	if err := p0.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if !isDone(p0.Context()) || !errors.Is(context.Cause(p0.Context()), client.ErrUnlocked) {
		t.Fatalf("after Release: cause %v", context.Cause(p0.Context()))
	}
	if err := p0.Release(ctx); !errors.Is(err, client.ErrNotHeld) {
		t.Fatalf("second Release = %v, want ErrNotHeld", err)
	}
	again, err := sem.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again.Slot() != 0 || again.Token().Number <= old.Number {
		t.Fatalf("slot 0 again: slot %d token %d (was %d)", again.Slot(), again.Token().Number, old.Number)
	}
	// The slot's guard fences by its token: the old permit's is refused.
	if _, err := c.Fence(ctx, again.Resource(), again.Token().Number); err != nil {
		t.Fatal(err)
	}
	var refused *client.RefusalError
	if _, err := c.Fence(ctx, "jobs#0", old.Number); !errors.As(err, &refused) || refused.Reason != guard.ReasonStale {
		t.Fatalf("the released permit's token = %v, want stale-token", err)
	}
}

// A blocked Acquire is served by the release of any slot.
func TestSemaphoreAcquireWaits(t *testing.T) {
	ctx := context.Background()
	srv, c := start(t, fenceviewtest.Config{})
	p, err := c.Semaphore("one", 1).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other := clientOf(t, srv, client.Config{Holder: "other"})
	got := make(chan *client.Permit, 1)
	errc := make(chan error, 1)
	go func() {
		q, err := other.Semaphore("one", 1).Acquire(ctx)
		got <- q
		errc <- err
	}()
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	q := <-got
	if err := <-errc; err != nil || q.Slot() != 0 || q.Token().Number <= p.Token().Number {
		t.Fatalf("waiter got %v, %v", q, err)
	}
}

func TestSemaphoreBadInput(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, fenceviewtest.Config{})
	for _, tc := range []struct {
		name    string
		permits int
	}{
		{"jobs", 0}, {"jobs", 1025}, {"", 1}, {"a#b", 1}, {strings.Repeat("n", 151), 1}, {"bad\x00", 1},
	} {
		if _, err := c.Semaphore(tc.name, tc.permits).TryAcquire(ctx, 0); !errors.Is(err, client.ErrInvalid) {
			t.Errorf("Semaphore(%q, %d): %v, want ErrInvalid", tc.name, tc.permits, err)
		}
	}
	if _, err := c.Semaphore(strings.Repeat("n", 150), 1024).TryAcquire(ctx, 0); err != nil {
		t.Errorf("the longest name and most permits: %v", err)
	}
	if _, err := c.Semaphore("never", 1).State(ctx); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("State of a semaphore never acquired = %v, want ErrNotFound", err)
	}
}

// A permit's watchdog renews its slot's lease; a force-expire of the slot
// ends the permit's context with the refusal.
func TestPermitWatchdog(t *testing.T) {
	ctx := context.Background()
	srv, c := startWith(t, fenceviewtest.Config{AdminToken: "s3cret"}, client.Config{AdminToken: "s3cret", RPC: true})
	events := client.HoldEvents(c)
	p, err := c.Semaphore("jobs", 3).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	outliveTwoLeases(t, srv, events)
	if st, _ := c.State(ctx, "jobs#0"); !st.Locked || st.Holder != c.Holder() || st.Token != p.Token().Number {
		t.Fatalf("slot after two leases: %+v", st)
	}
	forceLoss(t, srv, c, events, "jobs#0", p.Context())
	if err := p.Release(ctx); !errors.Is(err, client.ErrLeaseExpired) {
		t.Fatalf("Release after loss = %v", err)
	}
}

// A multi-lock is all or nothing: a request overlapping a held set gets
// none of its locks, and says who holds the overlap.
func TestLockAllOrNothing(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, fenceviewtest.Config{})
	l, err := c.LockAll(ctx, "a", "x", "y", "z")
	if err != nil {
		t.Fatal(err)
	}
	toks := l.Tokens()
	if len(toks) != 3 || toks["x"] <= 0 || toks["y"] <= 0 || toks["z"] <= 0 {
		t.Fatalf("tokens %v", toks)
	}
	if l.Token("y").Number != toks["y"] || l.Token("y").Resource != "y" || l.Fencing("z").Scope != "resource:z" || !l.Token("w").IsZero() {
		t.Fatalf("Token(y) %+v Fencing(z) %+v", l.Token("y"), l.Fencing("z"))
	}

	_, err = c.MultiLock("b", []string{"w", "z"}).TryLock(ctx, 0)
	var held *client.LocksHeldError
	if !errors.As(err, &held) || !errors.Is(err, client.ErrHeld) || len(held.Held) != 1 || held.Held[0].Resource != "z" || held.Held[0].Holder != "a" {
		t.Fatalf("overlapping TryLock = %v", err)
	}
	if st, _ := c.State(ctx, "w"); st.Locked || st.Token != 0 {
		t.Fatalf("a refused multi-lock took w: %+v", st)
	}

	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(context.Cause(l.Context()), client.ErrUnlocked) {
		t.Fatalf("cause after Unlock = %v", context.Cause(l.Context()))
	}
	for _, r := range []string{"x", "y", "z"} {
		if st, _ := c.State(ctx, r); st.Locked {
			t.Fatalf("%s still locked after Unlock: %+v", r, st)
		}
	}
	m, err := c.MultiLock("b", []string{"w", "z"}).TryLock(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m.Tokens()["z"] <= toks["z"] {
		t.Fatalf("z's token %d after %d", m.Tokens()["z"], toks["z"])
	}
}

// A blocked LockAll holds nothing while it waits, and gets the whole set
// once the last lock of it is free.
func TestLockAllWaits(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, fenceviewtest.Config{})
	a := c.Mutex("y", "a")
	if _, err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan *client.Locks, 1)
	errc := make(chan error, 1)
	go func() {
		l, err := c.LockAll(ctx, "b", "x", "y")
		got <- l
		errc <- err
	}()
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	l := <-got
	if err := <-errc; err != nil || len(l.Tokens()) != 2 {
		t.Fatalf("LockAll = %v, %v", l, err)
	}
}

// One watchdog renews every lock of the set; losing one lock ends the
// set's context, and Unlock then releases the others and names the lost.
func TestLockAllWatchdog(t *testing.T) {
	ctx := context.Background()
	srv, c := startWith(t, fenceviewtest.Config{AdminToken: "s3cret"}, client.Config{AdminToken: "s3cret"})
	events := client.HoldEvents(c)
	l, err := c.LockAll(ctx, "a", "x", "y", "z")
	if err != nil {
		t.Fatal(err)
	}
	outliveTwoLeases(t, srv, events)
	for _, r := range l.Resources() {
		if st, _ := c.State(ctx, r); !st.Locked || st.Holder != "a" || st.Token != l.Tokens()[r] {
			t.Fatalf("%s after two leases: %+v", r, st)
		}
	}
	forceLoss(t, srv, c, events, "y", l.Context())
	err = l.Unlock(ctx)
	if !errors.Is(err, client.ErrNotOwner) || !strings.Contains(err.Error(), `"y"`) {
		t.Fatalf("Unlock after losing y = %v", err)
	}
	for _, r := range []string{"x", "z"} {
		if st, _ := c.State(ctx, r); st.Locked {
			t.Fatalf("%s still locked: %+v", r, st)
		}
	}
}

func TestLockAllBadInput(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, fenceviewtest.Config{})
	many := make([]string, 65)
	for i := range many {
		many[i] = "r" + strings.Repeat("x", i)
	}
	for _, rs := range [][]string{nil, {"a", "a"}, many, {"ok", ""}} {
		if _, err := c.MultiLock("h", rs).TryLock(ctx, 0); !errors.Is(err, client.ErrInvalid) {
			t.Errorf("%d resources: %v, want ErrInvalid", len(rs), err)
		}
	}
	if _, err := c.LockAll(ctx, "", "a"); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("empty holder: %v", err)
	}
	if l, err := c.MultiLock("h", many[:64]).TryLock(ctx, 0); err != nil || len(l.Tokens()) != 64 {
		t.Errorf("64 resources: %v", err)
	}
}

// Campaign, proclaim, resign: the next leader's term is larger, and
// Observe sees every change in order.
func TestElection(t *testing.T) {
	ctx := context.Background()
	srv, c := start(t, fenceviewtest.Config{})
	obs := c.Election("db-primary").Observe(ctx)
	if l := next(t, obs); !l.IsZero() {
		t.Fatalf("first observed leader %+v, want none", l)
	}
	if _, err := c.Election("db-primary").Leader(ctx); !errors.Is(err, client.ErrNoLeader) {
		t.Fatalf("Leader with nobody leading = %v", err)
	}

	n1, n2 := clientOf(t, srv, client.Config{Holder: "node-1"}), clientOf(t, srv, client.Config{Holder: "node-2"})
	e1, e2 := n1.Election("db-primary"), n2.Election("db-primary")
	if isDone(e1.Context()) == false {
		t.Fatal("context before the first campaign should be done")
	}
	t1, err := e1.Campaign(ctx, "10.0.0.1")
	if err != nil || t1 <= 0 || e1.Term() != t1 || e1.Token().Number != t1 || e1.Token().Resource != "db-primary" {
		t.Fatalf("Campaign = %d, %v (Term %d, Token %+v)", t1, err, e1.Term(), e1.Token())
	}
	if l := next(t, obs); l.Candidate != "node-1" || l.Value != "10.0.0.1" || l.Term != t1 {
		t.Fatalf("observed %+v", l)
	}
	l, err := e2.Leader(ctx)
	if err != nil || l.Candidate != "node-1" || l.Term != t1 || l.Value != "10.0.0.1" || l.ExpiresAt.IsZero() {
		t.Fatalf("Leader = %+v, %v", l, err)
	}

	if err := e1.Proclaim(ctx, "10.0.0.9"); err != nil {
		t.Fatal(err)
	}
	if l := next(t, obs); l.Candidate != "node-1" || l.Value != "10.0.0.9" || l.Term != t1 {
		t.Fatalf("observed after proclaim %+v", l)
	}
	if err := e2.Proclaim(ctx, "me"); !errors.Is(err, client.ErrNotLeader) {
		t.Fatalf("a follower's Proclaim = %v, want ErrNotLeader", err)
	}
	// Campaigning again while leading keeps the term.
	if again, err := e1.Campaign(ctx, "10.0.0.10"); err != nil || again != t1 {
		t.Fatalf("leader's second Campaign = %d, %v (term %d)", again, err, t1)
	}
	if l := next(t, obs); l.Value != "10.0.0.10" || l.Term != t1 {
		t.Fatalf("observed after re-campaign %+v", l)
	}

	won := make(chan int64, 1)
	errc := make(chan error, 1)
	go func() {
		t2, err := e2.Campaign(ctx, "10.0.0.2")
		won <- t2
		errc <- err
	}()
	held := e1.Context()
	if err := e1.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(context.Cause(held), client.ErrResigned) {
		t.Fatalf("cause after Resign = %v", context.Cause(held))
	}
	t2 := <-won
	if err := <-errc; err != nil || t2 <= t1 {
		t.Fatalf("node-2's Campaign = %d, %v (term 1 was %d)", t2, err, t1)
	}
	if l := next(t, obs); !l.IsZero() {
		t.Fatalf("observed after resign %+v, want none", l)
	}
	if l := next(t, obs); l.Candidate != "node-2" || l.Term != t2 || l.Value != "10.0.0.2" {
		t.Fatalf("observed the new term %+v", l)
	}
	if err := e1.Proclaim(ctx, "x"); !errors.Is(err, client.ErrNotLeader) {
		t.Fatalf("resigned leader's Proclaim = %v", err)
	}
	// The old term's writes are refused once the new term's landed.
	if _, err := c.Fence(ctx, "db-primary", t2); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Fence(ctx, "db-primary", t1); err == nil {
		t.Fatal("the resigned leader's term was accepted after the new one")
	}
}

// A leadership force-expired on the server ends at the next renewal: its
// context says the lease was lost, and another candidate is elected.
func TestElectionLeaseLost(t *testing.T) {
	ctx := context.Background()
	srv, c := startWith(t, fenceviewtest.Config{AdminToken: "s3cret"}, client.Config{AdminToken: "s3cret"})
	n1 := clientOf(t, srv, client.Config{Holder: "node-1", AdminToken: "s3cret"})
	events := client.HoldEvents(n1)
	e1 := n1.Election("leader")
	t1, err := e1.Campaign(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	outliveTwoLeases(t, srv, events)
	if l, err := e1.Leader(ctx); err != nil || l.Term != t1 {
		t.Fatalf("after two leases: %+v, %v", l, err)
	}
	obs := c.Election("leader").Observe(ctx)
	if l := next(t, obs); l.Candidate != "node-1" || l.Term != t1 {
		t.Fatalf("observed %+v", l)
	}
	if err := c.ForceExpire(ctx, "leader"); err != nil {
		t.Fatal(err)
	}
	if l := next(t, obs); !l.IsZero() {
		t.Fatalf("observed after the force-expire %+v, want none", l)
	}
	srv.Clock().Advance(lease / 3)
	expect(t, events, "lost")
	if cause := context.Cause(e1.Context()); !errors.Is(cause, client.ErrLeaseLost) {
		t.Fatalf("cause = %v", cause)
	}
	t2, err := clientOf(t, srv, client.Config{Holder: "node-2", AdminToken: "s3cret"}).Election("leader").Campaign(ctx, "")
	if err != nil || t2 <= t1 {
		t.Fatalf("node-2 = %d, %v", t2, err)
	}
	if l := next(t, obs); l.Candidate != "node-2" || l.Term != t2 {
		t.Fatalf("observed the new term %+v", l)
	}
	if err := e1.Resign(ctx); err != nil {
		t.Fatalf("Resign of a lost leadership = %v, want nil (nothing to give up)", err)
	}
}

// An observation ends, its channel closed, when its context ends or the
// client closes.
func TestObserveEnds(t *testing.T) {
	_, c := start(t, fenceviewtest.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	obs := c.Election("e").Observe(ctx)
	<-obs // the stream is open
	cancel()
	for range obs {
	}
	obs = c.Election("e").Observe(context.Background())
	<-obs
	c.Close()
	for range obs {
	}
	if _, ok := <-c.Election("e").Observe(context.Background()); ok {
		t.Fatal("Observe after Close sent a leader")
	}
}

func TestElectionBadInput(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, fenceviewtest.Config{})
	if _, err := c.Election("e").Campaign(ctx, strings.Repeat("v", 4097)); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("a value over 4 KiB: %v", err)
	}
	if _, err := c.Election("").Campaign(ctx, ""); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("an empty name: %v", err)
	}
	e := c.Election("e")
	if _, err := e.Campaign(ctx, strings.Repeat("v", 4096)); err != nil {
		t.Fatalf("a 4 KiB value: %v", err)
	}
	if err := e.Proclaim(ctx, strings.Repeat("v", 4097)); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("Proclaim over 4 KiB: %v", err)
	}
	if l, _ := e.Leader(ctx); len(l.Value) != 4096 {
		t.Errorf("a refused proclaim changed the value to %d bytes", len(l.Value))
	}
	if _, err := client.New(client.Config{URL: "http://127.0.0.1:1", Holder: "bad\n"}); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("Config.Holder of a bad id: %v", err)
	}
}

// Close ends every kind of hold with ErrClosed, and the observations, and
// leaves no goroutine of the client behind.
func TestCloseEndsPrimitives(t *testing.T) {
	before := running()
	_, c := startWith(t, fenceviewtest.Config{}, client.Config{RPC: true})
	ctx := context.Background()
	p, err := c.Semaphore("jobs", 2).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.LockAll(ctx, "a", "x", "y")
	if err != nil {
		t.Fatal(err)
	}
	e := c.Election("e")
	if _, err := e.Campaign(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	obs := e.Observe(ctx)
	next(t, obs)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	noClientGoroutines(t, before)
	for name, done := range map[string]context.Context{"permit": p.Context(), "locks": l.Context(), "leadership": e.Context()} {
		if !isDone(done) || !errors.Is(context.Cause(done), client.ErrClosed) {
			t.Errorf("%s: done %v, cause %v", name, isDone(done), context.Cause(done))
		}
	}
	if _, ok := <-obs; ok {
		t.Error("the observation outlived Close")
	}
	if _, err := c.Semaphore("jobs", 2).Acquire(ctx); !errors.Is(err, client.ErrClosed) {
		t.Errorf("Acquire after Close: %v", err)
	}
	if _, err := e.Campaign(ctx, "v"); !errors.Is(err, client.ErrClosed) {
		t.Errorf("Campaign after Close: %v", err)
	}
}

// A second Resign is refused as a second Unlock is, by the server: 409
// not-leader (ErrNotLeader); so is a Resign of a leadership never won.
func TestSecondResignIsNotLeader(t *testing.T) {
	ctx := context.Background()
	for _, cfg := range []client.Config{{DisableRPC: true}, {}} {
		_, c := startWith(t, fenceviewtest.Config{}, cfg)
		e := c.Election("resign-twice")
		if err := e.Resign(ctx); !errors.Is(err, client.ErrNotLeader) {
			t.Errorf("Resign before any campaign (RPC off: %v) = %v, want ErrNotLeader", cfg.DisableRPC, err)
		}
		if _, err := e.Campaign(ctx, "v"); err != nil {
			t.Fatal(err)
		}
		if err := e.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		var ae *client.APIError
		if err := e.Resign(ctx); !errors.Is(err, client.ErrNotLeader) || !errors.As(err, &ae) || ae.StatusCode != http.StatusConflict {
			t.Errorf("second Resign (RPC off: %v) = %v, want the server's 409 not-leader", cfg.DisableRPC, err)
		}
	}
}
