package client_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/client/fenceviewtest"
	"github.com/fenceview/fenceview/guard"
)

func TestResourcesAndRejections(t *testing.T) {
	_, c := start(t, fenceviewtest.Config{FakeClock: true})
	ctx := context.Background()
	for i := range 3 {
		res := fmt.Sprintf("shelf/%d", i)
		m := c.Mutex(res, "w")
		tok, err := m.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Fence(ctx, res, tok); err != nil {
			t.Fatal(err)
		}
		m.Unlock(ctx)
	}
	// Five refusals on shelf/0, reported as a plugin would.
	for range 5 {
		if _, err := c.Report(ctx, client.Report{Resource: "shelf/0", Decision: guard.Decision{Presented: 1, Required: 2, Reason: "stale-token"}, Source: "test"}); err != nil {
			t.Fatal(err)
		}
	}

	seen := map[string]client.Resource{}
	for r, err := range c.AllResources(ctx, client.ResourceQuery{Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		seen[r.Resource] = r
	}
	if len(seen) != 3 || seen["shelf/0"].LastToken != 1 || seen["shelf/0"].Rejected != 5 || seen["shelf/1"].Accepted != 1 {
		t.Fatalf("resources: %+v", seen)
	}
	one, err := c.Resource(ctx, "shelf/2")
	if err != nil || one.HighWaterMark != 1 || one.Holder != "" {
		t.Fatalf("Resource: %+v %v", one, err)
	}
	var ae *client.APIError
	if _, err := c.Resource(ctx, "never"); !errors.As(err, &ae) || ae.StatusCode != 404 {
		t.Fatalf("unknown resource: %v", err)
	}

	// Paging: two pages of two and one of one, newest first, no repeats.
	p, err := c.Rejections(ctx, client.RejectionQuery{Resource: "shelf/0", Limit: 2})
	if err != nil || len(p.Rejections) != 2 || p.Next == "" {
		t.Fatalf("first page: %+v %v", p, err)
	}
	ids := map[int64]bool{}
	last := int64(1 << 62)
	for r, err := range c.AllRejections(ctx, client.RejectionQuery{Resource: "shelf/0", Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		if ids[r.ID] || r.ID >= last || r.Reason != "stale-token" || r.Source != "test" || r.At.IsZero() {
			t.Fatalf("rejection %+v after %d", r, last)
		}
		ids[r.ID], last = true, r.ID
	}
	if len(ids) != 5 {
		t.Fatalf("walked %d rejections, want 5", len(ids))
	}
	if _, err := c.Rejections(ctx, client.RejectionQuery{Limit: 5000}); err == nil {
		t.Fatal("limit 5000 accepted")
	}
}

func TestReset(t *testing.T) {
	srv, admin := startWith(t, fenceviewtest.Config{AdminToken: "s3cret"}, client.Config{AdminToken: "s3cret"})
	ctx := context.Background()
	m := admin.Mutex("ledger", "w")
	if _, err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	m.Unlock(ctx)
	// A plugin reports a mark far above the last token: the counter alarm.
	if _, err := admin.Report(ctx, client.Report{Resource: "ledger", Decision: guard.Decision{Accepted: true, Presented: 50}, Source: "restored-plugin"}); err != nil {
		t.Fatal(err)
	}
	if r, _ := admin.Resource(ctx, "ledger"); r.CounterAlarm == 0 {
		t.Fatalf("no alarm: %+v", r)
	}

	anon := srv.Client(t)
	var ae *client.APIError
	if _, err := anon.Reset(ctx, "ledger", 100); !errors.As(err, &ae) || ae.StatusCode != 401 {
		t.Fatalf("reset without the admin token: %v", err)
	}
	res, err := admin.Reset(ctx, "ledger", 100)
	if err != nil {
		t.Fatal(err)
	}
	if res.NextToken != 101 {
		t.Fatalf("reset: %+v, want next token 101", res)
	}
	if r, _ := admin.Resource(ctx, "ledger"); r.CounterAlarm != 0 {
		t.Fatalf("alarm still raised after reset: %+v", r)
	}
	tok, err := m.Lock(ctx)
	if err != nil || tok != 101 {
		t.Fatalf("grant after reset: %d %v, want 101", tok, err)
	}
	if _, err := admin.Reset(ctx, "ledger", 0); err == nil {
		t.Fatal("floor 0 accepted")
	}
}

// /v1/resources is paged; a restarting guard still gets every mark.
func TestHighWaterMarksReadsEveryPage(t *testing.T) {
	_, c := start(t, fenceviewtest.Config{})
	ctx := context.Background()
	for batch := 0; batch < 3; batch++ {
		var reports []client.Report
		for i := 0; i < 900; i++ {
			n := batch*900 + i
			reports = append(reports, client.Report{Resource: fmt.Sprintf("r/%04d", n), Source: "p",
				Decision: guard.Decision{Accepted: true, Presented: int64(n + 1)}})
		}
		if _, err := c.Report(ctx, reports...); err != nil {
			t.Fatal(err)
		}
	}
	marks, err := c.HighWaterMarks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(marks) != 2700 || marks["r/0000"] != 1 || marks["r/2699"] != 2700 {
		t.Fatalf("%d marks, r/2699 = %d", len(marks), marks["r/2699"])
	}
}
