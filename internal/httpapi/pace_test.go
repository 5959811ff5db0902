package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/fenceview/fenceview/internal/fair"
)

// contend makes x's dispatcher contended: a request of another flow had
// to queue (its clock is fixed, so it stays contended), then left.
func (x *admissionAPI) contend(t *testing.T) {
	t.Helper()
	seat, err := x.d.Acquire(context.Background(), "other", fair.New, costCommit)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	left := make(chan error)
	go func() {
		_, err := x.d.Acquire(ctx, "other", fair.New, costCommit)
		left <- err
	}()
	until(func() bool { return x.d.Stats().Queued == 1 })
	cancel()
	<-left
	seat.Done(0)
	if !x.d.Contended() {
		t.Fatal("the dispatcher is not contended")
	}
}

// While the server is contended, a key busier than the other is held back
// before its request is read, its lease-keeping is not, and neither is the
// other key; one that would wait past --overload-max-wait is answered 429
// overloaded, nothing done.
func TestPacingHoldsBackTheBusiestKey(t *testing.T) {
	x := newAdmissionAPI(t, fair.Config{Seats: 2, LeaseSeats: 1, FlowQueue: 8, TotalQueue: 16, MaxWait: 1500 * time.Millisecond, FlowRate: 1}, 10)
	var mu sync.Mutex
	held := map[string][]time.Duration{}
	x.overload.sleep = func(ctx context.Context, d time.Duration) error {
		return nil // the clock is fixed: the test sees the hold, never waits it out
	}
	x.overload.ObservePace = func(fclass string, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		held[fclass] = append(held[fclass], d)
	}
	x.contend(t)
	heldNow := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(held["key"])
	}
	heldFor := func(i int) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return held["key"][i]
	}

	// The honest key b, then the storm key a: its first request is its
	// burst, its second waits a turn (0.8 s at 1.25 a second: b sent one,
	// and a may send a quarter more).
	if r := x.post(t, x.bKey, "/v1/locks/b0/acquire", map[string]any{"holder": "h"}); r.status != http.StatusOK {
		t.Fatalf("b's acquire: %d %v", r.status, r.body)
	}
	if r := x.post(t, x.aKey, "/v1/locks/a0/acquire", map[string]any{"holder": "h"}); r.status != http.StatusOK || heldNow() != 0 {
		t.Fatalf("a's first acquire: %d %v, held %d times; want served at once", r.status, r.body, heldNow())
	}
	if r := x.post(t, x.aKey, "/v1/locks/a1/acquire", map[string]any{"holder": "h"}); r.status != http.StatusOK || heldNow() != 1 {
		t.Fatalf("a's second acquire: %d %v, held %d times; want served after being held once", r.status, r.body, heldNow())
	}
	if heldFor(0) != 800*time.Millisecond {
		t.Fatalf("a's second acquire was held %v, want 800ms (one turn at 1.25 a second)", heldFor(0))
	}
	// Lease-keeping is never held back.
	for range 3 {
		if r := x.post(t, x.aKey, "/v1/locks/a0/renew", map[string]any{"holder": "h"}); r.status != http.StatusOK {
			t.Fatalf("a's renew: %d %v", r.status, r.body)
		}
	}
	if heldNow() != 1 {
		t.Fatalf("a's renews were held back: held %d times", heldNow())
	}
	// b, busier than the floor and no busier than a, is not held back.
	if r := x.post(t, x.bKey, "/v1/locks/b1/acquire", map[string]any{"holder": "h"}); r.status != http.StatusOK || heldNow() != 1 {
		t.Fatalf("b's second acquire: %d %v, held %d times; want served at once", r.status, r.body, heldNow())
	}
	// a now follows b's pace, 2.5 a second (2, and a quarter more): its
	// turns, 2 behind, are 0.8 s and 1.2 s away; the next would wait 1.6 s,
	// over --overload-max-wait: shed.
	for i, want := range []time.Duration{800 * time.Millisecond, 1200 * time.Millisecond} {
		if r := x.post(t, x.aKey, fmt.Sprintf("/v1/locks/p%d/acquire", i), map[string]any{"holder": "h"}); r.status != http.StatusOK || heldNow() != 2+i {
			t.Fatalf("a's acquire at b's pace: %d %v, held %d times; want served after being held", r.status, r.body, heldNow())
		}
		if got := heldFor(1 + i); got != want {
			t.Fatalf("a's acquire at b's pace held %v, want %v", got, want)
		}
	}
	r := x.post(t, x.aKey, "/v1/locks/a2/acquire", map[string]any{"holder": "h"})
	if r.status != http.StatusTooManyRequests || r.body["code"] != "overloaded" || r.header.Get("Retry-After") != "2" {
		t.Fatalf("a's acquire over the wait: %d %v (Retry-After %q), want 429 overloaded, Retry-After 2", r.status, r.body, r.header.Get("Retry-After"))
	}
	if _, err := x.s.Service.Resource("a2"); err == nil {
		t.Fatal("the shed acquire changed something: resource a2 exists")
	}
}
