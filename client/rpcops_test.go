package client_test

import (
	"context"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/client/fenceviewtest"
)

// counting is a transport that counts the HTTP requests it sends.
type counting struct{ n atomic.Int32 }

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// In RPC mode every operation the server's RPC stream has goes over it,
// the primitives and their watchdogs' renewals included: not one HTTP
// request is sent (the stream's own dial does not go through the
// client's transport).
func TestRPCModeCarriesEveryOperation(t *testing.T) {
	ctx := context.Background()
	srv := fenceviewtest.New(t, fenceviewtest.Config{FakeClock: true})
	tr := &counting{}
	c := clientOf(t, srv, client.Config{RPC: true, HTTPClient: &http.Client{Transport: tr}})
	events := client.HoldEvents(c)

	m := c.Mutex("r", "a")
	tok, err := m.TryLock(ctx, 0, 0)
	must(t, err)
	_, err = c.Fence(ctx, "r", tok)
	must(t, err)
	_, err = c.State(ctx, "r")
	must(t, err)
	must(t, m.Unlock(ctx))

	p, err := c.Semaphore("jobs", 2).TryAcquire(ctx, 0)
	must(t, err)
	_, err = c.Semaphore("jobs", 2).State(ctx)
	must(t, err)
	l, err := c.MultiLock("a", []string{"x", "y"}).TryLock(ctx, 0)
	must(t, err)
	e := c.Election("leader")
	_, err = e.Campaign(ctx, "v1")
	must(t, err)
	must(t, e.Proclaim(ctx, "v2"))
	if ld, err := e.Leader(ctx); err != nil || ld.Value != "v2" {
		t.Fatalf("Leader = %+v, %v", ld, err)
	}
	// One renewal of each hold: the permit, the multi-lock, the election.
	for range 3 {
		expect(t, events, "armed")
	}
	srv.Clock().Advance(lease / 3)
	// Each renews, then waits for the next renewal.
	if renewed := countRenewed(t, events, 6); renewed != 3 {
		t.Fatalf("%d renewals, want 3", renewed)
	}
	must(t, p.Release(ctx))
	must(t, l.Unlock(ctx))
	must(t, e.Resign(ctx))
	if n := tr.n.Load(); n != 0 {
		t.Fatalf("%d HTTP requests in RPC mode, want 0", n)
	}
}

// countRenewed reads the next k hold events and counts the renewals
// among them.
func countRenewed(t *testing.T, events <-chan string, k int) int {
	t.Helper()
	renewed := 0
	for range k {
		select {
		case e := <-events:
			if e == "renewed" {
				renewed++
			}
		case <-time.After(30 * time.Second): // a hang guard
			t.Fatalf("%d renewals, then no event", renewed)
		}
	}
	return renewed
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// One scheduler renews every hold of a client: many permits held at once
// cost no goroutine each while they wait, and every one is renewed at
// each third of its lease, through two lease lengths.
func TestOneSchedulerRenewsEveryHold(t *testing.T) {
	const n = 40
	ctx := context.Background()
	srv := fenceviewtest.New(t, fenceviewtest.Config{FakeClock: true})
	c := clientOf(t, srv, client.Config{RPC: true})
	events := client.HoldEvents(c)
	sem := c.Semaphore("many", n)
	if _, err := sem.TryAcquire(ctx, 0); err != nil { // the RPC session's goroutines start
		t.Fatal(err)
	}
	expect(t, events, "armed")
	before := runtime.NumGoroutine()
	for range n - 1 {
		if _, err := sem.TryAcquire(ctx, 0); err != nil {
			t.Fatal(err)
		}
		expect(t, events, "armed")
	}
	if grew := runtime.NumGoroutine() - before; grew >= n/2 {
		t.Fatalf("%d holds took %d goroutines", n-1, grew)
	}
	for range 6 {
		srv.Clock().Advance(lease / 3)
		if renewed := countRenewed(t, events, 2*n); renewed != n {
			t.Fatalf("%d of %d renewed", renewed, n)
		}
	}
	st, err := sem.State(ctx)
	if err != nil || len(st.Held) != n {
		t.Fatalf("after two leases: %d held, %v", len(st.Held), err)
	}
}
