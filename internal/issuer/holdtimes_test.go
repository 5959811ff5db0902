package issuer

import (
	"strconv"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
)

// A grant's wait runs from the acquire's arrival to its grant (0 when
// immediate); a hold from the grant to the release, the force-expire, or
// the end of a lease that ran out (not the later sweep that noticed).
func TestLockTimesOfGrantsAndHolds(t *testing.T) {
	h := newHarness(t)
	acquire(t, h.Service, "r", "a", time.Minute)
	got := h.queueAcquire(t, "r", "b")
	h.clock.Advance(3 * time.Second)
	if _, err := h.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	if g := <-got; g.Holder != "b" {
		t.Fatalf("waiter got %+v", g)
	}
	h.clock.Advance(2 * time.Second)
	if err := h.ForceExpire(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	acquire(t, h.Service, "r", "c", time.Second)
	h.clock.Advance(5 * time.Second)
	h.Sweep(ctx)

	lt := h.LockTimes("r")
	want := fenceview.LockTimes{
		Waits: fenceview.DurationStats{Count: 3, Total: 3, P50: 0, P99: 3 * time.Second, Max: 3 * time.Second},
		Holds: fenceview.DurationStats{Count: 3, Total: 3, P50: 2 * time.Second, P99: 3 * time.Second, Max: 3 * time.Second},
	}
	if lt != want {
		t.Fatalf("LockTimes = %+v, want %+v", lt, want)
	}
	if lt := h.LockTimes("never-seen"); lt != (fenceview.LockTimes{}) {
		t.Fatalf("unknown resource: %+v", lt)
	}
	hist := h.LockTimeHistograms()
	if k := hist[fenceview.KindLock]; k.Kind != "lock" || k.Waits.Count != 3 || k.Holds.Count != 3 || k.Holds.Sum != 6 {
		t.Fatalf("lock histograms = %+v", k)
	}
	if k := hist[fenceview.KindPermit]; k.Waits.Count != 0 || k.Holds.Count != 0 {
		t.Fatalf("semaphore histograms counted plain locks: %+v", k)
	}
}

// The windows are bounded twice: a fixed ring per resource, and rings for
// the most recently active resources only, whatever the number of
// resources or samples.
func TestHoldTimesWindowIsBounded(t *testing.T) {
	ht := newHoldTimes(8)
	for i := range 100 {
		ht.add([]timedSample{{id: "r" + strconv.Itoa(i), d: time.Second}})
	}
	if len(ht.byID) != 8 {
		t.Fatalf("%d resources timed, want 8", len(ht.byID))
	}
	n := 0
	for tr := ht.head; tr != nil; tr = tr.next {
		if want := "r" + strconv.Itoa(99-n); tr.id != want {
			t.Fatalf("position %d holds %s, want %s (most recent first)", n, tr.id, want)
		}
		n++
	}
	if n != 8 {
		t.Fatalf("list of %d, want 8", n)
	}
	if ht.get("r91").Waits.Count != 0 || ht.get("r92").Waits.Count != 1 {
		t.Fatal("the least recently active resource was not the one pushed out")
	}
	// A resource touched again moves to the front and survives.
	ht.add([]timedSample{{id: "r92", d: time.Second}})
	ht.add([]timedSample{{id: "new", d: time.Second}})
	if ht.get("r92").Waits.Total != 2 || ht.get("r93").Waits.Count != 0 {
		t.Fatal("a recently touched resource was pushed out instead of the oldest")
	}

	// 1000 holds of 1..1000 ms: the window keeps the last 64.
	for i := 1; i <= 1000; i++ {
		ht.add([]timedSample{{id: "busy", d: time.Duration(i) * time.Millisecond, hold: true}})
	}
	got := ht.get("busy").Holds
	want := fenceview.DurationStats{Count: fenceview.TimedSamples, Total: 1000, P50: 968 * time.Millisecond, P99: 1000 * time.Millisecond, Max: 1000 * time.Millisecond}
	if got != want {
		t.Fatalf("window = %+v, want %+v", got, want)
	}
	if len(ht.byID) != 8 {
		t.Fatalf("%d resources timed, want 8", len(ht.byID))
	}
}

func TestRankIsNearestRank(t *testing.T) {
	s := make([]time.Duration, 100)
	for i := range s {
		s[i] = time.Duration(i + 1)
	}
	if rank(s, 50) != 50 || rank(s, 99) != 99 || rank(s, 100) != 100 {
		t.Fatalf("ranks of 1..100: %d %d %d", rank(s, 50), rank(s, 99), rank(s, 100))
	}
	one := []time.Duration{7}
	if rank(one, 50) != 7 || rank(one, 99) != 7 {
		t.Fatal("one sample is every percentile")
	}
	if (&ring{}).stats() != (fenceview.DurationStats{}) {
		t.Fatal("an empty window has no stats")
	}
}

func TestHoldKind(t *testing.T) {
	for _, c := range []struct {
		r    fenceview.Resource
		kind fenceview.Kind
	}{
		{fenceview.Resource{ResourceID: "orders"}, fenceview.KindLock},
		{fenceview.Resource{ResourceID: "jobs#3"}, fenceview.KindPermit},
		{fenceview.Resource{ResourceID: "jobs#x"}, fenceview.KindLock},
		{fenceview.Resource{ResourceID: "leader", Election: true}, fenceview.KindElection},
	} {
		if k := holdKind(&c.r); k != c.kind {
			t.Errorf("holdKind(%+v) = %v, want %v", c.r, k, c.kind)
		}
	}
}

// A semaphore's waiter is timed from its arrival to the slot it gets,
// on that slot, and counts under kind semaphore; an election's grant
// under election.
func TestLockTimesOfPermitsAndElections(t *testing.T) {
	h := newHarness(t)
	req := fenceview.PermitRequest{Semaphore: "jobs", Holder: "a", Permits: 1, Lease: time.Minute}
	if _, err := h.AcquirePermit(ctx, req); err != nil {
		t.Fatal(err)
	}
	queued := make(chan struct{}, 1)
	h.queuedHook = func(string, string) { queued <- struct{}{} }
	got := make(chan fenceview.Grant, 1)
	go func() {
		r := req
		r.Holder, r.Wait = "b", time.Hour
		g, err := h.AcquirePermit(ctx, r)
		if err != nil {
			t.Error(err)
		}
		got <- g
	}()
	<-queued
	h.clock.Advance(4 * time.Second)
	if _, err := h.ReleasePermit(ctx, "jobs", "a", 0); err != nil {
		t.Fatal(err)
	}
	if g := <-got; g.Holder != "b" || g.ResourceID != "jobs#0" {
		t.Fatalf("waiter got %+v", g)
	}
	lt := h.LockTimes("jobs#0")
	if lt.Waits.Count != 2 || lt.Waits.Max != 4*time.Second || lt.Holds.Count != 1 || lt.Holds.Max != 4*time.Second {
		t.Fatalf("slot's times = %+v", lt)
	}
	if _, _, err := h.Campaign(ctx, fenceview.CampaignRequest{Election: "leader", Candidate: "n1", Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	hist := h.LockTimeHistograms()
	if k := hist[fenceview.KindPermit]; k.Kind != "semaphore" || k.Waits.Count != 2 || k.Holds.Count != 1 || k.Waits.Sum != 4 {
		t.Fatalf("semaphore histograms = %+v", k)
	}
	if k := hist[fenceview.KindElection]; k.Kind != "election" || k.Waits.Count != 1 {
		t.Fatalf("election histograms = %+v", k)
	}
	if k := hist[fenceview.KindLock]; k.Waits.Count != 0 {
		t.Fatalf("lock histograms counted other kinds: %+v", k)
	}
}

// The cost of recording one grant's wait with the window full and every
// sample a new resource (the worst case: an eviction each time).
func BenchmarkHoldTimesAdd(b *testing.B) {
	ht := newHoldTimes(fenceview.TimedResources)
	ids := make([]string, 4*fenceview.TimedResources)
	for i := range ids {
		ids[i] = "r" + strconv.Itoa(i)
	}
	sample := make([]timedSample, 1)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		sample[0] = timedSample{id: ids[i%len(ids)], d: time.Millisecond}
		ht.add(sample)
	}
}
