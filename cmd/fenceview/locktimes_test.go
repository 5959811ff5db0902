package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// GET /v1/resources/{resource} carries its lock's recent waits and holds
// (in the OpenAPI document too, which every answer is checked against).
func TestResourceShowsWaitAndHoldTimes(t *testing.T) {
	s := startServer(t)
	s.acquire("orders", "a", 30000)
	s.clock.Advance(2500 * time.Millisecond)
	if r := s.do("POST", "/v1/locks/orders/release", map[string]any{"holder": "a"}); r.Status != 200 {
		t.Fatalf("release: %d %s", r.Status, r.Raw)
	}
	r := s.do("GET", "/v1/resources/orders", nil)
	var got struct {
		Times struct {
			Waiters    int
			Wait, Hold struct {
				Count               int
				P50Ms, P99Ms, MaxMs float64
			}
		}
	}
	if err := json.Unmarshal(r.Raw, &got); err != nil {
		t.Fatal(err)
	}
	tm := got.Times
	if tm.Wait.Count != 1 || tm.Wait.MaxMs != 0 || tm.Hold.Count != 1 || tm.Hold.P50Ms != 2500 || tm.Hold.MaxMs != 2500 || tm.Waiters != 0 {
		t.Fatalf("times = %+v in %s", tm, r.Raw)
	}
	// The aggregate histograms, by kind of lock only.
	m := string(s.do("GET", "/metrics", nil).Raw)
	for _, line := range []string{
		`fenceview_lock_hold_seconds_bucket{kind="lock",le="1"} 0`,
		`fenceview_lock_hold_seconds_bucket{kind="lock",le="5"} 1`,
		`fenceview_lock_hold_seconds_sum{kind="lock"} 2.5`,
		`fenceview_lock_wait_seconds_count{kind="lock"} 1`,
		`fenceview_lock_wait_seconds_bucket{kind="lock",le="0.001"} 1`,
		`fenceview_lock_hold_seconds_count{kind="semaphore"} 0`,
		`fenceview_lock_wait_seconds_count{kind="election"} 0`,
	} {
		if !strings.Contains(m, line+"\n") {
			t.Errorf("metrics lack %q", line)
		}
	}
	// Lists stay lean: no times per row.
	if list := s.do("GET", "/v1/resources", nil); containsKey(list.Raw, "times") {
		t.Fatalf("the list carries times: %s", list.Raw)
	}
}

func containsKey(raw []byte, key string) bool {
	var v struct {
		Resources []map[string]any
	}
	json.Unmarshal(raw, &v)
	for _, r := range v.Resources {
		if _, ok := r[key]; ok {
			return true
		}
	}
	return false
}
