package issuer

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/clock"
	"github.com/fenceview/fenceview/internal/sqlite"
)

var t0 = clock.TestDate

type harness struct {
	*Service
	db     *sqlite.DB
	clock  *clock.Fake
	path   string
	issuer string // the Config's Issuer at the next open
}

// newHarness starts a service on a real SQLite file and a fake clock.
func newHarness(t *testing.T) *harness {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fenceview.db")
	h := &harness{clock: clock.NewFake(t0), path: path}
	h.open(t)
	return h
}

func (h *harness) open(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, h.path)
	if err != nil {
		t.Fatal(err)
	}
	// A long sweep interval: tests call Sweep themselves, except the one
	// test of the sweep loop.
	svc, err := Open(ctx, db, Config{Issuer: h.issuer, Clock: h.clock, SweepInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	h.db, h.Service = db, svc
	t.Cleanup(func() { h.Service.Close(); db.Close() })
}

// restart closes the service and the database and opens them again.
func (h *harness) restart(t *testing.T) {
	t.Helper()
	h.Service.Close()
	h.db.Close()
	h.open(t)
}

var ctx = context.Background()

// newOnStore is a service over store, loaded with resources as if read
// from it, on a fake clock at t0, which it returns for the test to move.
func newOnStore(store Store, resources ...*fenceview.Resource) (*Service, *clock.Fake) {
	fake := clock.NewFake(t0)
	return New(store, resources, 0, Config{Issuer: "test-issuer", Clock: fake, SweepInterval: time.Hour}), fake
}

// openDB is a store on a new SQLite file, closed as the test ends (after
// a service the test closes).
func openDB(tb testing.TB) *sqlite.DB {
	tb.Helper()
	db, err := sqlite.Open(ctx, filepath.Join(tb.TempDir(), "fenceview.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// queueAcquire starts an acquire of res by holder for a minute's lease,
// waiting up to an hour, and returns once it is queued: its grant arrives
// on the channel.
func (h *harness) queueAcquire(t *testing.T, res, holder string) <-chan fenceview.Grant {
	t.Helper()
	return queueGrant(t, h.Service, fenceview.AcquireRequest{ResourceID: res, Holder: holder, Lease: time.Minute, Wait: time.Hour})
}

// queueGrant starts req, an acquire that waits, on s and returns once it
// is queued (see queue): its grant arrives on the channel.
func queueGrant(t *testing.T, s *Service, req fenceview.AcquireRequest) <-chan fenceview.Grant {
	t.Helper()
	waiting := queue(t, s, func() (fenceview.Grant, error) { return s.Acquire(ctx, req) })
	got := make(chan fenceview.Grant, 1)
	go func() {
		r := <-waiting
		if r.err != nil {
			t.Error(r.err)
		}
		got <- r.v
	}()
	return got
}

func acquire(t *testing.T, s *Service, res, holder string, lease time.Duration) fenceview.Grant {
	t.Helper()
	g, err := s.Acquire(ctx, fenceview.AcquireRequest{ResourceID: res, Holder: holder, Lease: lease, Wait: 0})
	if err != nil {
		t.Fatalf("acquire %s by %s: %v", res, holder, err)
	}
	return g
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if fenceview.ErrorCode(err) != code {
		t.Fatalf("err = %v, want code %s", err, code)
	}
}

func TestReentrantHoldCountsTakeNewTokens(t *testing.T) {
	h := newHarness(t)
	g1 := acquire(t, h.Service, "r", "a", time.Minute)
	g2 := acquire(t, h.Service, "r", "a", time.Minute)
	if g1.HoldCount != 1 || g2.HoldCount != 2 || g2.Fencing.Token <= g1.Fencing.Token {
		t.Fatalf("grants %+v then %+v: want hold counts 1, 2 and a larger token", g1, g2)
	}
	for _, want := range []int{1, 0} {
		left, err := h.Release(ctx, "r", "a")
		if err != nil || left != want {
			t.Fatalf("release = %d, %v; want %d", left, err, want)
		}
	}
	if ls, _ := h.Lock("r"); ls.Locked || ls.LastToken != g2.Fencing.Token {
		t.Fatalf("after last release: %+v", ls)
	}
	if _, err := h.Release(ctx, "r", "a"); fenceview.ErrorCode(err) != fenceview.ENOTHELD {
		t.Fatalf("release of a free lock: %v", err)
	}
}

func TestOnlyTheOwnerMayReleaseOrRenew(t *testing.T) {
	h := newHarness(t)
	g := acquire(t, h.Service, "r", "a", time.Minute)
	_, err := h.Release(ctx, "r", "b")
	wantCode(t, err, fenceview.ENOTOWNER)
	_, err = h.Renew(ctx, "r", "b", 0)
	wantCode(t, err, fenceview.ENOTOWNER)
	ls, _ := h.Lock("r")
	if !ls.Locked || ls.Holder != "a" || ls.HoldCount != 1 || ls.LastToken != g.Fencing.Token {
		t.Fatalf("after refused release/renew the lock is %+v", ls)
	}
}

func TestRenewKeepsTheTokenAndExtends(t *testing.T) {
	h := newHarness(t)
	g := acquire(t, h.Service, "r", "a", 10*time.Second)
	h.clock.Advance(9 * time.Second)
	r, err := h.Renew(ctx, "r", "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Fencing.Token != g.Fencing.Token || !r.ExpiresAt.Equal(t0.Add(19*time.Second)) {
		t.Fatalf("renew = %+v, want token %d expiring at +19s", r, g.Fencing.Token)
	}
	r, err = h.Renew(ctx, "r", "a", time.Minute)
	if err != nil || !r.ExpiresAt.Equal(t0.Add(69*time.Second)) || r.LeaseMs != 60000 {
		t.Fatalf("renew with a lease = %+v, %v", r, err)
	}
	// After expiry a renew is refused: the lease is gone.
	h.clock.Advance(2 * time.Minute)
	_, err = h.Renew(ctx, "r", "a", 0)
	wantCode(t, err, fenceview.ELEASEEXPIRED)
}

// A re-entrant acquire without a lease keeps the current lease's length;
// a first acquire without one gets the default; a lease given is used.
func TestReentrantAcquireKeepsTheLease(t *testing.T) {
	h := newHarness(t)
	acquire(t, h.Service, "r", "a", time.Minute)
	h.clock.Advance(10 * time.Second)
	g := acquire(t, h.Service, "r", "a", 0)
	if g.LeaseMs != 60000 || !g.ExpiresAt.Equal(t0.Add(70*time.Second)) || g.HoldCount != 2 {
		t.Fatalf("re-entrant grant without a lease = %+v, want a 60 s lease expiring at +70s", g)
	}
	if g := acquire(t, h.Service, "r", "a", 5*time.Second); g.LeaseMs != 5000 {
		t.Fatalf("re-entrant grant with a lease = %+v, want 5 s", g)
	}
	if g := acquire(t, h.Service, "fresh", "a", 0); g.LeaseMs != fenceview.DefaultLease.Milliseconds() {
		t.Fatalf("first grant without a lease = %+v, want the default", g)
	}
	// After the lease ran out the holder starts afresh: the default.
	h.clock.Advance(time.Hour)
	if g := acquire(t, h.Service, "r", "a", 0); g.LeaseMs != fenceview.DefaultLease.Milliseconds() || g.HoldCount != 1 {
		t.Fatalf("grant after expiry = %+v, want the default lease and hold count 1", g)
	}
	_, err := h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: "a", Lease: -time.Second, Wait: 0})
	wantCode(t, err, fenceview.EINVALID)
}

// A waiter that named no lease gets the default when the lock is handed to
// it, not the previous holder's lease.
func TestWaiterWithoutLeaseGetsTheDefault(t *testing.T) {
	h := newHarness(t)
	acquire(t, h.Service, "r", "a", time.Hour)
	got := queueGrant(t, h.Service, fenceview.AcquireRequest{ResourceID: "r", Holder: "b", Lease: 0, Wait: time.Minute})
	if _, err := h.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	if g := <-got; g.Holder != "b" || g.LeaseMs != fenceview.DefaultLease.Milliseconds() {
		t.Fatalf("handed-off grant = %+v, want b with the default lease", g)
	}
}

func TestTryLockRefusedImmediatelyAndAfterWait(t *testing.T) {
	h := newHarness(t)
	acquire(t, h.Service, "r", "a", time.Minute)
	_, err := h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: "b", Lease: time.Minute, Wait: 0})
	var fe *fenceview.Error
	if !errors.As(err, &fe) || fe.Code != fenceview.ELOCKHELD || fe.Fields["holder"] != "a" {
		t.Fatalf("immediate try-lock: %v", err)
	}

	queued := make(chan struct{}, 1)
	h.queuedHook = func(string, string) { queued <- struct{}{} }
	errc := make(chan error, 1)
	go func() {
		_, err := h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: "b", Lease: time.Minute, Wait: 5 * time.Second})
		errc <- err
	}()
	<-queued
	h.clock.Advance(5 * time.Second) // the wait runs out; the lease (60 s) does not
	wantCode(t, <-errc, fenceview.ELOCKHELD)
	if m := h.Metrics(); m.Waiters != 0 {
		t.Fatalf("a waiter that gave up is still counted: %d", m.Waiters)
	}
	if ls, _ := h.Lock("r"); ls.Holder != "a" || ls.Waiters != 0 {
		t.Fatalf("lock after a timed-out waiter: %+v", ls)
	}
}

func TestWaitersWokenByReleaseFirstComeFirstServed(t *testing.T) {
	h := newHarness(t)
	g0 := acquire(t, h.Service, "r", "a", time.Minute)
	queued := make(chan string, 2)
	h.queuedHook = func(_, holder string) { queued <- holder }
	grants := make(chan fenceview.Grant, 2)
	for _, holder := range []string{"b", "c"} {
		go func() {
			g, err := h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: holder, Lease: time.Minute, Wait: time.Hour})
			if err != nil {
				t.Error(err)
			}
			grants <- g
		}()
		<-queued // b is queued before c starts
	}
	// A new arrival does not jump the queue.
	if _, err := h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: "d", Lease: time.Minute, Wait: 0}); fenceview.ErrorCode(err) != fenceview.ELOCKHELD {
		t.Fatalf("new arrival: %v", err)
	}
	if _, err := h.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	gb := <-grants
	if gb.Holder != "b" || gb.Fencing.Token <= g0.Fencing.Token {
		t.Fatalf("first waiter got %+v", gb)
	}
	if _, err := h.Release(ctx, "r", "b"); err != nil {
		t.Fatal(err)
	}
	gc := <-grants
	if gc.Holder != "c" || gc.Fencing.Token <= gb.Fencing.Token {
		t.Fatalf("second waiter got %+v", gc)
	}
}

func TestWaiterWokenByExpiry(t *testing.T) {
	h := newHarness(t)
	acquire(t, h.Service, "r", "a", time.Second)
	got := h.queueAcquire(t, "r", "b")
	h.clock.Advance(2 * time.Second)
	h.Sweep(ctx)
	if g := <-got; g.Holder != "b" || !g.ExpiresAt.Equal(t0.Add(62*time.Second)) {
		t.Fatalf("waiter after expiry got %+v", g)
	}
}

// The sweep loop records an expiry nobody asked about, on its own.
func TestSweepLoopEmitsExpire(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fc := clock.NewFake(t0)
	s := New(db, nil, 0, Config{Clock: fc, SweepInterval: 250 * time.Millisecond})
	defer s.Close()
	<-fc.TimerCreated() // the loop is parked on its first timer
	sub := s.Subscribe("r", 16)
	acquire(t, s, "r", "a", 500*time.Millisecond)
	if batch := <-sub.Events(); batch[0].Type != fenceview.EventGrant {
		t.Fatalf("first event %+v", batch[0])
	}
	fc.Advance(time.Second)
	e := (<-sub.Events())[0]
	if e.Type != fenceview.EventExpire || e.Holder != "a" || e.Reason != "lease-expired" {
		t.Fatalf("event after the lease ran out: %+v", e)
	}
}

func TestForceExpireFreesAndTokensKeepRising(t *testing.T) {
	h := newHarness(t)
	var last int64
	for i := 0; i < 20; i++ {
		g := acquire(t, h.Service, "res-1", "client-"+string(rune('a'+i)), time.Minute)
		if g.Fencing.Token <= last {
			t.Fatalf("grant %d token %d not above %d", i, g.Fencing.Token, last)
		}
		last = g.Fencing.Token
		if err := h.ForceExpire(ctx, "res-1"); err != nil {
			t.Fatal(err)
		}
		if ls, _ := h.Lock("res-1"); ls.Locked {
			t.Fatalf("still locked after force-expire: %+v", ls)
		}
	}
}

func TestTokensSurviveRestartAndStayAboveTheMark(t *testing.T) {
	h := newHarness(t)
	g := acquire(t, h.Service, "r", "a", time.Second)
	// An admin raised the counter far above the last grant.
	if _, err := h.ResetCounter(ctx, "r", 500); err != nil {
		t.Fatal(err)
	}
	h.restart(t)
	h.clock.Advance(2 * time.Second)
	g2 := acquire(t, h.Service, "r", "b", time.Second)
	if g2.Fencing.Token != 501 || g2.Fencing.Token <= g.Fencing.Token {
		t.Fatalf("token after restart = %d, want 501 (above the recorded mark)", g2.Fencing.Token)
	}
	if seq := h.LastSeq(); seq < 4 {
		t.Fatalf("event sequence after restart = %d", seq)
	}
}

func TestFenceDecisions(t *testing.T) {
	h := newHarness(t)
	a := acquire(t, h.Service, "r", "a", time.Second)
	h.clock.Advance(2 * time.Second)
	b := acquire(t, h.Service, "r", "b", time.Minute)

	fence := func(tok guard.Token) guard.Decision {
		t.Helper()
		d, err := h.Fence(ctx, fenceview.Fence{ResourceID: "r", Token: tok, Source: "test"})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := fence(b.Fencing); !d.Accepted {
		t.Fatalf("B's write refused: %+v", d)
	}
	if d := fence(a.Fencing); d.Accepted || d.Reason != guard.ReasonStale || d.Required != b.Fencing.Token {
		t.Fatalf("A's stale write: %+v", d)
	}
	if d := fence(guard.Token{Token: b.Fencing.Token + 1}); d.Accepted || d.Reason != guard.ReasonUnissued {
		t.Fatalf("a token never issued: %+v", d)
	}
	if d := fence(guard.Token{Token: b.Fencing.Token, Issuer: "someone-else"}); d.Reason != guard.ReasonForeignIssuer {
		t.Fatalf("foreign issuer: %+v", d)
	}
	if d := fence(guard.Token{Token: b.Fencing.Token, Scope: "resource:other"}); d.Reason != guard.ReasonScopeMismatch {
		t.Fatalf("other scope: %+v", d)
	}
	res, _ := h.Resource("r")
	if res.HighWaterMark != b.Fencing.Token || res.Accepted != 1 || res.Rejected != 4 {
		t.Fatalf("resource after decisions: %+v", res)
	}
}

func TestFenceOnForeignResourceKeepsPlainRule(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct {
		tok int64
		ok  bool
	}{{1 << 40, true}, {1<<40 - 1, false}, {1 << 40, true}} {
		d, err := h.Fence(ctx, fenceview.Fence{ResourceID: "elsewhere", Token: guard.Token{Token: c.tok}})
		if err != nil || d.Accepted != c.ok {
			t.Fatalf("fence %d = %+v, %v; want accepted=%v", c.tok, d, err, c.ok)
		}
	}
}

// A commit that fails changes nothing a client can see, and the token it
// would have issued is never issued to anyone else.
func TestFailedCommitChangesNothingAndBurnsTheToken(t *testing.T) {
	h := newHarness(t)
	g1 := acquire(t, h.Service, "r", "a", time.Minute)
	h.db.Close() // the disk goes away
	_, err := h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: "a", Lease: time.Minute, Wait: 0})
	wantCode(t, err, fenceview.EUNAVAILABLE)
	ls, _ := h.Lock("r")
	if ls.HoldCount != 1 {
		t.Fatalf("failed re-entrant grant changed the hold count: %+v", ls)
	}
	// Reopen the store under the same service: the next token skips the one
	// the failed commit used.
	db, err := sqlite.Open(ctx, h.path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	h.Service.store = db
	g3 := acquire(t, h.Service, "r", "a", time.Minute)
	if g3.Fencing.Token != g1.Fencing.Token+2 || g3.HoldCount != 2 {
		t.Fatalf("grant after a failed commit: %+v (first token %d)", g3, g1.Fencing.Token)
	}
}

func TestReportValidatesTheWholeBatch(t *testing.T) {
	h := newHarness(t)
	_, err := h.Report(ctx, []fenceview.Report{
		{ResourceID: "r", Token: 5, Accepted: true, Source: "p"},
		{ResourceID: "", Token: 5, Accepted: true, Source: "p"},
	})
	wantCode(t, err, fenceview.EINVALID)
	if _, err := h.Resource("r"); fenceview.ErrorCode(err) != fenceview.ENOTFOUND {
		t.Fatalf("a refused batch recorded something: %v", err)
	}
}

func TestConcurrentGrantsAreUniquePerResource(t *testing.T) {
	h := newHarness(t)
	var mu sync.Mutex
	seen := map[string]map[int64]bool{}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			holder := string(rune('a' + w))
			for i := 0; i < 50; i++ {
				res := []string{"x", "y"}[i%2]
				g, err := h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: res, Holder: holder, Lease: time.Minute, Wait: time.Hour})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[res] == nil {
					seen[res] = map[int64]bool{}
				}
				if seen[res][g.Fencing.Token] {
					t.Errorf("token %d issued twice for %s", g.Fencing.Token, res)
				}
				seen[res][g.Fencing.Token] = true
				mu.Unlock()
				if _, err := h.Release(ctx, res, holder); err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	for res, toks := range seen {
		if len(toks) != 200 {
			t.Fatalf("%s: %d distinct tokens, want 200", res, len(toks))
		}
		for i := int64(1); i <= 200; i++ {
			if !toks[i] {
				t.Fatalf("%s: token %d missing: tokens are not contiguous", res, i)
			}
		}
	}
}

// A stream subscriber that stops reading is dropped once its buffer is full;
// grants never wait for it.
func TestSlowSubscriberIsDroppedNotWaitedFor(t *testing.T) {
	h := newHarness(t)
	slow := h.Subscribe("", 2) // batches: one per commit here
	fast := h.Subscribe("", 100)
	for i := 0; i < 10; i++ {
		acquire(t, h.Service, "r", "a", time.Minute) // would block here if publishing waited
	}
	select {
	case <-slow.Lost():
	default:
		t.Fatal("a subscriber 8 commits behind was not dropped")
	}
	if len(fast.Events()) != 10 {
		t.Fatalf("the reading subscriber got %d events, want 10", len(fast.Events()))
	}
	if m := h.Metrics(); m.StreamClients != 1 || m.StreamDropped != 1 {
		t.Fatalf("stream metrics: %+v", m)
	}
}

// Tokens come from a durable counter, never from the clock: a clock stepped
// forward expires leases early, a clock stepped back makes them last longer,
// and either way every token is above the last.
func TestClockJumpsNeverMoveTokensBack(t *testing.T) {
	h := newHarness(t)
	g1 := acquire(t, h.Service, "r", "a", time.Minute)
	h.clock.Advance(24 * time.Hour) // forward: the lease is over
	g2 := acquire(t, h.Service, "r", "b", time.Minute)
	h.clock.Set(t0.Add(-24 * time.Hour)) // back, a day before the first grant
	if ls, _ := h.Lock("r"); !ls.Locked || ls.Holder != "b" {
		t.Fatalf("after stepping the clock back: %+v", ls)
	}
	if _, err := h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: "c", Lease: time.Minute, Wait: 0}); fenceview.ErrorCode(err) != fenceview.ELOCKHELD {
		t.Fatalf("b's lease should still hold: %v", err)
	}
	if err := h.ForceExpire(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	g3 := acquire(t, h.Service, "r", "c", time.Minute)
	if !(g1.Fencing.Token < g2.Fencing.Token && g2.Fencing.Token < g3.Fencing.Token) {
		t.Fatalf("tokens %d, %d, %d do not rise", g1.Fencing.Token, g2.Fencing.Token, g3.Fencing.Token)
	}
}

var _ Record = (*sqlite.DB)(nil)

// A renew or release by the holder whose lease ended without a release is
// told lease-expired, and when; anyone else not-owner while another holds
// the lock, not-held when it is free. The record goes with a release or
// the same holder's new grant.
func TestLeaseExpiredIsToldApart(t *testing.T) {
	h := newHarness(t)
	refusal := func(err error, code string) map[string]any {
		t.Helper()
		var fe *fenceview.Error
		if !errors.As(err, &fe) || fe.Code != code {
			t.Fatalf("err = %v, want %s", err, code)
		}
		return fe.Fields
	}
	acquire(t, h.Service, "r", "a", 10*time.Second)
	h.clock.Advance(11 * time.Second)
	_, err := h.Renew(ctx, "r", "a", 0)
	if at := refusal(err, fenceview.ELEASEEXPIRED)["expiredAt"].(time.Time); !at.Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("expiredAt = %v, want the lease's end %v", at, t0.Add(10*time.Second))
	}
	if !strings.Contains(err.Error(), "ran out at "+t0.Add(10*time.Second).UTC().Format("2006-01-02T15:04:05.000Z")) {
		t.Fatalf("message does not say when the lease ran out: %v", err)
	}
	_, err = h.Release(ctx, "r", "b")
	refusal(err, fenceview.ENOTHELD)
	// Another holder's grant keeps the record; its release ends it.
	acquire(t, h.Service, "r", "b", time.Minute)
	_, err = h.Release(ctx, "r", "a")
	refusal(err, fenceview.ELEASEEXPIRED)
	_, err = h.Renew(ctx, "r", "c", 0)
	refusal(err, fenceview.ENOTOWNER)
	if _, err := h.Release(ctx, "r", "b"); err != nil {
		t.Fatal(err)
	}
	_, err = h.Release(ctx, "r", "a")
	refusal(err, fenceview.ENOTHELD)

	// A forced expiry ends the lease now; the holder's own new grant
	// ends the record.
	acquire(t, h.Service, "r", "a", time.Minute)
	h.clock.Advance(time.Second)
	if err := h.ForceExpire(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	_, err = h.Release(ctx, "r", "a")
	if at := refusal(err, fenceview.ELEASEEXPIRED)["expiredAt"].(time.Time); !at.Equal(h.clock.Now()) || !strings.Contains(err.Error(), "force-expired") {
		t.Fatalf("forced: expiredAt %v (want %v), %v", at, h.clock.Now(), err)
	}
	acquire(t, h.Service, "r", "a", time.Minute)
	if _, err := h.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	_, err = h.Release(ctx, "r", "a")
	refusal(err, fenceview.ENOTHELD)

	// The record is the holder's with its key: the same name with another
	// key is not told.
	k1, k2 := fenceview.WithOwnerKey(ctx, "k1"), fenceview.WithOwnerKey(ctx, "k2")
	if _, err := h.Acquire(k1, fenceview.AcquireRequest{ResourceID: "s", Holder: "a", Lease: time.Second}); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(2 * time.Second)
	_, err = h.Release(k2, "s", "a")
	refusal(err, fenceview.ENOTHELD)
	_, err = h.Release(k1, "s", "a")
	refusal(err, fenceview.ELEASEEXPIRED)
}
