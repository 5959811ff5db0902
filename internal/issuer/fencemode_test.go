package issuer

import (
	"testing"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
)

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

// In mode current a token below the last one issued is refused as
// superseded, required the last token issued, even above the mark; the
// mark stays; the last token issued and anything the rule refuses are
// decided as ever. In mode mark the same token is accepted.
func TestFenceModeCurrent(t *testing.T) {
	h := newHarness(t)
	t1 := acquire(t, h.Service, "r", "a", time.Second).Fencing.Token
	h.clock.Advance(2 * time.Second)
	t2 := acquire(t, h.Service, "r", "b", time.Minute).Fencing.Token
	fence := func(token int64, mode string) guard.Decision {
		t.Helper()
		d, err := h.Fence(ctx, fenceview.Fence{ResourceID: "r", Token: guard.Token{Token: token}, Mode: mode})
		if err != nil {
			t.Fatalf("fence %d in mode %q: %v", token, mode, err)
		}
		return d
	}
	d := fence(t1, fenceview.FenceModeCurrent)
	if d.Accepted || d.Reason != guard.ReasonSuperseded || d.Presented != t1 || d.Required != t2 {
		t.Fatalf("token %d in mode current after %d was issued: %+v", t1, t2, d)
	}
	if r, _ := h.Resource("r"); r.HighWaterMark != 0 || r.LastToken != t2 || r.Rejected != 1 {
		t.Fatalf("after the superseded refusal: %+v, want mark 0, last token %d, one rejection", r, t2)
	}
	if d := fence(t1, fenceview.FenceModeMark); !d.Accepted {
		t.Fatalf("token %d in mode mark: %+v", t1, d)
	}
	if d := fence(t2, fenceview.FenceModeCurrent); !d.Accepted {
		t.Fatalf("the last token issued in mode current: %+v", d)
	}
	if d := fence(t1, ""); d.Accepted || d.Reason != guard.ReasonStale || d.Required != t2 {
		t.Fatalf("token %d below the mark in the default mode: %+v", t1, d)
	}
	if d := fence(t2+1, fenceview.FenceModeCurrent); d.Accepted || d.Reason != guard.ReasonUnissued {
		t.Fatalf("an unissued token in mode current: %+v", d)
	}
	for _, bad := range []string{"Current", "strict", "current ", "mark\x00"} {
		_, err := h.Fence(ctx, fenceview.Fence{ResourceID: "r", Token: guard.Token{Token: t2}, Mode: bad})
		wantCode(t, err, fenceview.EINVALID)
	}
	if r, _ := h.Resource("r"); r.Accepted != 2 || r.Rejected != 3 {
		t.Fatalf("bad modes changed the record: %+v", r)
	}
}

// A plugin's report with reason superseded names the last token issued,
// not its mark: the server's mark does not move.
func TestReportedSupersededLeavesTheMark(t *testing.T) {
	h := newHarness(t)
	acquire(t, h.Service, "r", "a", time.Second)
	h.clock.Advance(2 * time.Second)
	t2 := acquire(t, h.Service, "r", "b", time.Minute).Fencing.Token
	if _, err := h.Report(ctx, []fenceview.Report{{ResourceID: "r", Token: 1, Required: t2, Reason: guard.ReasonSuperseded, Source: "plugin"}}); err != nil {
		t.Fatal(err)
	}
	if r, _ := h.Resource("r"); r.HighWaterMark != 0 || r.Rejected != 1 {
		t.Fatalf("after a reported superseded refusal: %+v", r)
	}
}

// Superseded refusals are counted under their own reason, not as other.
func TestSupersededIsAKnownReason(t *testing.T) {
	if fenceview.BoundReason(guard.ReasonSuperseded) != guard.ReasonSuperseded {
		t.Fatalf("superseded counts as %q", fenceview.BoundReason(guard.ReasonSuperseded))
	}
}
