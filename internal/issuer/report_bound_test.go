package issuer

import (
	"math"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/signedtest"
)

// poisons are the reports that used to exhaust an id nobody had locked
// yet: an accepted 2^63-1, or a refusal whose guard "requires" 2^63-1.
var poisons = []fenceview.Report{
	{ResourceID: "fresh", Token: math.MaxInt64, Accepted: true, Source: "attacker"},
	{ResourceID: "fresh", Token: 1, Accepted: false, Required: math.MaxInt64, Source: "attacker"},
}

// Without --require-signatures, a report on an id this server never issued
// for sets the mark to at most MaxReportedMark and raises the foreign-mark
// alarm with the real claim; the next grant goes above the bound, and so
// do grants after a restart.
func TestReportCannotExhaustAnUnusedID(t *testing.T) {
	for _, poison := range poisons {
		h := newHarness(t)
		if n, err := h.Report(ctx, []fenceview.Report{poison}); err != nil || n != 1 {
			t.Fatalf("report: %d, %v", n, err)
		}
		res, _ := h.Resource("fresh")
		if res.HighWaterMark != fenceview.MaxReportedMark || res.LastToken != 0 || res.CounterAlarm != math.MaxInt64 {
			t.Fatalf("resource after the report: %+v", res)
		}
		alarms := h.events(t, "fresh", fenceview.EventAlarm)
		if len(alarms) != 1 || alarms[0].Reason != fenceview.AlarmForeignMark || alarms[0].Token != math.MaxInt64 {
			t.Fatalf("alarm events: %+v", alarms)
		}
		// A report's event keeps what the guard said.
		if e := h.events(t, "fresh", map[bool]string{true: fenceview.EventAccept, false: fenceview.EventReject}[poison.Accepted]); len(e) != 1 ||
			max(e[0].Token, e[0].Required) != math.MaxInt64 {
			t.Fatalf("decision events: %+v", e)
		}
		h.restart(t)
		g := acquire(t, h.Service, "fresh", "honest", time.Minute)
		if g.Fencing.Token != fenceview.MaxReportedMark+1 {
			t.Fatalf("first grant after the report = %d, want %d", g.Fencing.Token, int64(fenceview.MaxReportedMark+1))
		}
		if d := h.fence(t, "fresh", g.Fencing.Token); !d.Accepted {
			t.Fatalf("the server's fence refused its own grant: %+v", d)
		}
	}
	// At the bound or below, a report sets the mark as before, no alarm.
	h := newHarness(t)
	if _, err := h.Report(ctx, []fenceview.Report{{ResourceID: "moved", Token: fenceview.MaxReportedMark, Accepted: true, Source: "old-service"}}); err != nil {
		t.Fatal(err)
	}
	if res, _ := h.Resource("moved"); res.HighWaterMark != fenceview.MaxReportedMark || res.CounterAlarm != 0 {
		t.Fatalf("report at the bound: %+v", res)
	}
	// The server's own fence follows the same cap: above it, refused,
	// nothing recorded (TestFenceAboveTheForeignCapChangesNothing).
	_, err := h.Fence(ctx, fenceview.Fence{ResourceID: "claimed", Token: guard.Token{Token: math.MaxInt64 - 5}})
	wantCode(t, err, fenceview.EINVALID)
}

// With --require-signatures an unsigned report raises nothing, on an
// unused id or on one this server issued for: no mark, no counter, no
// alarm; it is recorded. A report signed by this issuer still raises the
// counter.
func TestUnsignedReportRaisesNothingUnderRequireSignatures(t *testing.T) {
	v, _ := guard.NewVerifier(signedtest.Public(signedtest.Old))
	s := newSignedService(t, v, true)
	for _, poison := range poisons {
		if _, err := s.Report(ctx, []fenceview.Report{poison}); err != nil {
			t.Fatal(err)
		}
	}
	if res, _ := s.Resource("fresh"); res.HighWaterMark != 0 || res.LastToken != 0 || res.CounterAlarm != 0 || res.Accepted != 1 || res.Rejected != 1 {
		t.Fatalf("unused id after unsigned reports: %+v", res)
	}
	if g := acquire(t, s, "fresh", "honest", time.Minute); g.Fencing.Token != 1 {
		t.Fatalf("first grant = %d, want 1", g.Fencing.Token)
	}
	if _, err := s.Report(ctx, []fenceview.Report{
		{ResourceID: "fresh", Token: 1, Accepted: true, Source: "g"},                     // below the last: still unsigned
		{ResourceID: "fresh", Token: 99, Accepted: true, Source: "g"},                    // above it
		{ResourceID: "fresh", Token: 1, Accepted: false, Required: 77, Source: "g"},      // a refusal's claim
		{ResourceID: "fresh", Token: 50, Accepted: true, Source: "g", Proven: true},      // input cannot claim proof
		{ResourceID: "fresh", Token: 40, Accepted: true, Source: "g", Signature: "nope"}, // nor a bad signature
	}); err != nil {
		t.Fatal(err)
	}
	if res, _ := s.Resource("fresh"); res.HighWaterMark != 0 || res.LastToken != 1 || res.CounterAlarm != 0 {
		t.Fatalf("issued id after unsigned reports: %+v", res)
	}
	if _, err := s.Report(ctx, []fenceview.Report{
		{ResourceID: "fresh", Token: 30, Accepted: true, Source: "g", Signature: signedtest.Sign(t, signedtest.Old, "fresh", 30)},
	}); err != nil {
		t.Fatal(err)
	}
	if res, _ := s.Resource("fresh"); res.LastToken != 30 || res.HighWaterMark != 30 || res.CounterAlarm != 30 {
		t.Fatalf("after a signed report: %+v", res)
	}
}
