package issuer

import (
	"database/sql"
	"reflect"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
)

// The server's fenced writes append their events alone (no resource row
// logged), and a restart reads back the marks and counters they left.
func TestFencedWritesAppendOneRowAndSurviveRestart(t *testing.T) {
	h := newHarness(t)
	g := acquire(t, h.Service, "r", "a", time.Minute)
	before := h.logRows(t)
	for _, tok := range []guard.Token{g.Fencing, {Token: g.Fencing.Token + 5}, g.Fencing} {
		if _, err := h.Fence(ctx, fenceview.Fence{ResourceID: "r", Token: tok, Source: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := h.logRows(t); n != before {
		t.Fatalf("three fences logged %d resource rows", n-before)
	}
	want, err := h.Resource("r")
	if err != nil || want.Accepted != 2 || want.Rejected != 1 || want.HighWaterMark != g.Fencing.Token {
		t.Fatalf("before restart: %+v (%v)", want, err)
	}
	h.restart(t)
	got, err := h.Resource("r")
	if err != nil || got.Accepted != want.Accepted || got.Rejected != want.Rejected || got.HighWaterMark != want.HighWaterMark ||
		!got.LastRejectionAt.Equal(want.LastRejectionAt) || got.Holder != want.Holder || got.LastToken != want.LastToken {
		t.Fatalf("after restart: %+v (%v), want %+v", got, err, want)
	}
}

// Grants, renewals and releases append their events alone too (no
// resource row logged), and a restart reads back every holder, lease,
// token and counter exactly; so do a semaphore's permits, a multi-lock's
// locks, an election's leader and expiries.
func TestGrantsAppendOneRowAndSurviveRestart(t *testing.T) {
	h := newHarness(t)
	for i, id := range []string{"a", "b", "c", "d", "e"} {
		acquire(t, h.Service, id, "holder-"+id, time.Duration(i+1)*time.Minute)
	}
	h.clock.Advance(time.Second)
	if _, err := h.Renew(ctx, "b", "holder-b", 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Release(ctx, "c", "holder-c"); err != nil {
		t.Fatal(err)
	}
	acquire(t, h.Service, "c", "holder-c2", time.Minute)
	acquire(t, h.Service, "d", "holder-d", time.Minute) // re-entered
	if n := h.logRows(t); n != 0 {
		t.Fatalf("grants, renewals and releases logged %d resource rows", n)
	}
	if _, err := h.AcquirePermit(ctx, fenceview.PermitRequest{Semaphore: "jobs", Holder: "p", Permits: 2, Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.AcquirePermit(ctx, fenceview.PermitRequest{Semaphore: "jobs", Holder: "q", Permits: 2, Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.AcquireAll(ctx, fenceview.AcquireAllRequest{ResourceIDs: []string{"m1", "m2"}, Holder: "m", Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Campaign(ctx, fenceview.CampaignRequest{Election: "boss", Candidate: "x", Value: "http://x", Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	durable := func() []fenceview.Resource {
		rs := h.Resources()
		for i := range rs {
			rs[i].Expired = nil // this process's memory of an expiry, never stored
		}
		return rs
	}
	for round := range 2 {
		if round == 1 {
			h.clock.Advance(2 * time.Minute)
			h.Sweep(ctx) // expiries
		}
		if n := h.logRows(t); n != 0 {
			t.Fatalf("round %d: permits, a multi-lock, a campaign or expiries logged %d resource rows", round, n)
		}
		want := durable()
		h.restart(t)
		if got := durable(); !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d, after restart:\n%+v\nwant\n%+v", round, got, want)
		}
	}
}

// logRows is the number of resource rows logged in the database, read
// beside the service as another process would.
func (h *harness) logRows(t *testing.T) (n int) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+h.path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow(`SELECT COUNT(*) FROM resource_log`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
