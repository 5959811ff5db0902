package issuer

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/signedtest"
)

func (h *harness) fence(t *testing.T, res string, token int64) guard.Decision {
	t.Helper()
	d, err := h.Fence(ctx, fenceview.Fence{ResourceID: res, Token: guard.Token{Token: token}, Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (h *harness) events(t *testing.T, res, typ string) []fenceview.Event {
	t.Helper()
	all, err := h.db.EventsAfter(ctx, 0, res, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []fenceview.Event
	for _, e := range all {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// The attack of issue 11: one report of token 2^63-1 as accepted raised
// the mark and counter to the maximum, so the honest holder was refused
// and every later acquire answered "tokens exhausted". Now a report above
// the last token issued moves neither: it is recorded and raises the
// counter alarm, and the honest holder and the next grant carry on.
func TestReportAboveLastIssuedMovesNeitherCounterNorMark(t *testing.T) {
	for _, poison := range []fenceview.Report{
		{ResourceID: "r", Token: math.MaxInt64, Accepted: true, Source: "attacker"},
		{ResourceID: "r", Token: 1, Accepted: false, Required: math.MaxInt64, Source: "attacker"},
	} {
		h := newHarness(t)
		g := acquire(t, h.Service, "r", "honest", time.Minute)
		if d := h.fence(t, "r", g.Fencing.Token); !d.Accepted {
			t.Fatalf("honest write refused before the attack: %+v", d)
		}
		if n, err := h.Report(ctx, []fenceview.Report{poison}); err != nil || n != 1 {
			t.Fatalf("report: %d, %v", n, err)
		}
		for round := 0; round < 2; round++ { // and after a restart
			res, _ := h.Resource("r")
			if res.HighWaterMark != 1 || res.LastToken != 1 || res.CounterAlarm != math.MaxInt64 {
				t.Fatalf("resource after the report: %+v", res)
			}
			if d := h.fence(t, "r", g.Fencing.Token); !d.Accepted {
				t.Fatalf("honest holder refused after the report: %+v", d)
			}
			h.restart(t)
		}
		alarms := h.events(t, "r", fenceview.EventAlarm)
		if len(alarms) != 1 || alarms[0].Reason != fenceview.AlarmCounterBehind || alarms[0].Token != math.MaxInt64 || alarms[0].Required != 1 {
			t.Fatalf("alarm events: %+v", alarms)
		}
		if m := h.Metrics(); m.CounterAlarms != 1 {
			t.Fatalf("counter alarms gauge = %d", m.CounterAlarms)
		}
		if _, err := h.Release(ctx, "r", "honest"); err != nil {
			t.Fatal(err)
		}
		g2 := acquire(t, h.Service, "r", "next", time.Minute)
		if g2.Fencing.Token != 2 {
			t.Fatalf("next grant = %d, want last issued + 1 = 2", g2.Fencing.Token)
		}
		if d := h.fence(t, "r", g2.Fencing.Token); !d.Accepted {
			t.Fatalf("the server's own fence refused the next grant: %+v", d)
		}
	}
}

// A report whose token carries a valid signature of this issuer (the
// signed-token seam: Report.Proven) was really issued, so it may raise the
// counter, with the alarm.
func TestProvenReportRaisesTheCounterWithAnAlarm(t *testing.T) {
	v, _ := guard.NewVerifier(signedtest.Public(signedtest.Old))
	s := newSignedService(t, v, false)
	acquire(t, s, "r", "a", time.Minute)
	if _, err := s.Report(ctx, []fenceview.Report{
		{ResourceID: "r", Token: 60, Accepted: true, Source: "g", Proven: true}, // input cannot claim proof
		{ResourceID: "r", Token: 50, Accepted: true, Source: "g", Signature: signedtest.Sign(t, signedtest.Old, "r", 50)},
	}); err != nil {
		t.Fatal(err)
	}
	res, _ := s.Resource("r")
	if res.LastToken != 50 || res.HighWaterMark != 50 || res.CounterAlarm != 60 {
		t.Fatalf("resource after a signed report: %+v", res)
	}
	if _, err := s.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	if g := acquire(t, s, "r", "b", time.Minute); g.Fencing.Token != 51 {
		t.Fatalf("grant after a signed report = %d, want 51", g.Fencing.Token)
	}
}

// Reports below the last token issued keep moving the server's mark, and
// raise no alarm.
func TestReportAtOrBelowLastIssuedMovesTheMark(t *testing.T) {
	h := newHarness(t)
	for i := 0; i < 3; i++ {
		acquire(t, h.Service, "r", "a", time.Minute)
	}
	if _, err := h.Report(ctx, []fenceview.Report{{ResourceID: "r", Token: 2, Accepted: true, Source: "g"}}); err != nil {
		t.Fatal(err)
	}
	if res, _ := h.Resource("r"); res.HighWaterMark != 2 || res.CounterAlarm != 0 {
		t.Fatalf("resource: %+v", res)
	}
	if d := h.fence(t, "r", 1); d.Accepted || d.Required != 2 {
		t.Fatalf("token below the reported mark: %+v", d)
	}
}

// No counter is ever raised to 2^63-1 by counting; the grant that would is
// refused with a message naming the recovery call, and nothing changes.
func TestTokensNeverReachTheMaximumByCounting(t *testing.T) {
	h := newHarness(t)
	for _, floor := range []int64{0, -1, fenceview.MaxIssued, math.MaxInt64} {
		_, err := h.ResetCounter(ctx, "r", floor)
		wantCode(t, err, fenceview.EINVALID)
	}
	if _, err := h.ResetCounter(ctx, "r", fenceview.MaxIssued-1); err != nil {
		t.Fatal(err)
	}
	if g := acquire(t, h.Service, "r", "a", time.Minute); g.Fencing.Token != fenceview.MaxIssued {
		t.Fatalf("last grant = %d, want %d", g.Fencing.Token, fenceview.MaxIssued)
	}
	_, err := h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: "a", Lease: time.Minute, Wait: 0})
	wantCode(t, err, fenceview.EEXHAUSTED)
	if !strings.Contains(err.Error(), "exhausted") || !strings.Contains(err.Error(), "/recover") {
		t.Fatalf("exhausted error: %v", err)
	}
	if ls, _ := h.Lock("r"); ls.LastToken != fenceview.MaxIssued || ls.HoldCount != 1 {
		t.Fatalf("lock after the refused grant: %+v", ls)
	}
}

// /v1/fence on a resource this server never issued for keeps the plain
// rule up to 2^62, so an id can be claimed in advance with a large token.
// The first grant then goes above the claimed mark (any guard that saw it
// would refuse a lower one) and raises a foreign-mark alarm; recovery
// brings the resource back to small tokens.
func TestFenceClaimInAdvanceIsVisibleAndRecoverable(t *testing.T) {
	h := newHarness(t)
	if d := h.fence(t, "orders-7", 1<<40); !d.Accepted {
		t.Fatalf("plain rule: %+v", d)
	}
	g := acquire(t, h.Service, "orders-7", "a", time.Minute)
	if g.Fencing.Token != 1<<40+1 {
		t.Fatalf("first grant above a claimed mark = %d", g.Fencing.Token)
	}
	res, _ := h.Resource("orders-7")
	alarms := h.events(t, "orders-7", fenceview.EventAlarm)
	if res.CounterAlarm != 1<<40 || len(alarms) != 1 || alarms[0].Reason != fenceview.AlarmForeignMark {
		t.Fatalf("no foreign-mark alarm: %+v %+v", res, alarms)
	}

	if d := h.fence(t, "orders-8", fenceview.MaxReportedMark); !d.Accepted {
		t.Fatalf("plain rule at the cap: %+v", d)
	}
	if g := acquire(t, h.Service, "orders-8", "a", time.Minute); g.Fencing.Token != fenceview.MaxReportedMark+1 {
		t.Fatalf("grant above a claim at the cap = %d", g.Fencing.Token)
	}
	if err := h.ForceExpire(ctx, "orders-8"); err != nil {
		t.Fatal(err)
	}
	res, err := h.Recover(ctx, "orders-8", 0)
	if err != nil || res.HighWaterMark != 0 || res.LastToken != 0 {
		t.Fatalf("recover: %+v %v", res, err)
	}
	if g := acquire(t, h.Service, "orders-8", "a", time.Minute); g.Fencing.Token != 1 {
		t.Fatalf("grant after recovery = %d, want 1", g.Fencing.Token)
	}
	rec := h.events(t, "orders-8", fenceview.EventRecover)
	if len(rec) != 1 || rec[0].Presented != fenceview.MaxReportedMark || rec[0].Required != fenceview.MaxReportedMark+1 || rec[0].Token != 0 || rec[0].Source != "admin" {
		t.Fatalf("recover event: %+v", rec)
	}
}

// A fence of 2^63-1 on an id never granted set the mark there, and the id
// could not be granted again until an admin recovered it; on a slot
// (jobs#1) it blocked the whole semaphore. Above 2^62, the cap reports
// already had, a fence is refused as a report is capped, and changes
// nothing: no resource, no mark, no event.
func TestFenceAboveTheForeignCapChangesNothing(t *testing.T) {
	h := newHarness(t)
	for _, id := range []string{"never-granted", "jobs#1"} {
		for _, tok := range []int64{math.MaxInt64, fenceview.MaxIssued, fenceview.MaxReportedMark + 1} {
			_, err := h.Fence(ctx, fenceview.Fence{ResourceID: id, Token: guard.Token{Token: tok}})
			wantCode(t, err, fenceview.EINVALID)
		}
		if _, err := h.Resource(id); fenceview.ErrorCode(err) != fenceview.ENOTFOUND {
			t.Fatalf("%s after refused fences: %v", id, err)
		}
	}
	if evs, _ := h.db.EventsAfter(ctx, 0, "", 10); len(evs) != 0 {
		t.Fatalf("refused fences recorded: %+v", evs)
	}
	acquire(t, h.Service, "never-granted", "a", time.Minute)
	for _, holder := range []string{"a", "b"} {
		if _, err := h.AcquirePermit(ctx, fenceview.PermitRequest{Semaphore: "jobs", Holder: holder, Permits: 2, Lease: time.Minute}); err != nil {
			t.Fatalf("permit for %s: %v", holder, err)
		}
	}
	// Once tokens are issued for it, a large token is unissued as before.
	d, err := h.Fence(ctx, fenceview.Fence{ResourceID: "never-granted", Token: guard.Token{Token: math.MaxInt64}})
	if err != nil || d.Accepted || d.Reason != guard.ReasonUnissued {
		t.Fatalf("a huge token after a grant: %+v %v", d, err)
	}
}

func TestRecoverGuardsLiveHoldersAndBadInput(t *testing.T) {
	h := newHarness(t)
	_, err := h.Recover(ctx, "nobody", 5)
	wantCode(t, err, fenceview.ENOTFOUND)
	for i := 0; i < 5; i++ {
		acquire(t, h.Service, "r", "a", time.Minute)
	}
	for _, bad := range []int64{-1, fenceview.MaxIssued, math.MaxInt64} {
		_, err := h.Recover(ctx, "r", bad)
		wantCode(t, err, fenceview.EINVALID)
	}
	// The live holder has token 5: recovering below it would issue 5 again.
	_, err = h.Recover(ctx, "r", 4)
	wantCode(t, err, fenceview.ECONFLICT)
	if res, _ := h.Resource("r"); res.LastToken != 5 {
		t.Fatalf("refused recovery changed the counter: %+v", res)
	}
	if err := h.ForceExpire(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Recover(ctx, "r", 3); err != nil {
		t.Fatal(err)
	}
	if g := acquire(t, h.Service, "r", "b", time.Minute); g.Fencing.Token != 4 {
		t.Fatalf("grant after recovery to 3 = %d", g.Fencing.Token)
	}
}
