package issuer

import (
	"testing"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
)

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
