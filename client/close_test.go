package client_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/client/fenceviewtest"
	"github.com/fenceview/fenceview/guard"
)

// clientGoroutines returns the stacks of live goroutines running code of
// package client, or the HTTP transport's connection loops (which belong to
// the client's own http.Client, the only one in this test binary's client
// side).
func clientGoroutines(except map[string]bool) []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if except[goroutineID(g)] {
			continue
		}
		if strings.Contains(g, "fenceview/fenceview/client.") && !strings.Contains(g, "client_test.") ||
			strings.Contains(g, "net/http.(*persistConn)") {
			out = append(out, g)
		}
	}
	return out
}

func goroutineID(stack string) string {
	id, _, _ := strings.Cut(strings.TrimPrefix(stack, "goroutine "), " ")
	return id
}

// running returns the ids of the goroutines running now.
func running() map[string]bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	ids := map[string]bool{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		ids[goroutineID(g)] = true
	}
	return ids
}

// noClientGoroutines fails when goroutines of the client outlive Close.
// Close waits for the goroutines of package client, but one that has just
// signalled its WaitGroup may still be listed until it is scheduled to
// return, and the transport's connection loops exit when their closed
// connection says so; so every goroutine gets a bounded number of
// scheduling rounds (as goleak does). A real leak stays and fails.
func noClientGoroutines(t *testing.T, before map[string]bool) {
	t.Helper()
	left := clientGoroutines(before)
	deadline := time.Now().Add(10 * time.Second)
	for len(left) > 0 && time.Now().Before(deadline) {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
		left = clientGoroutines(before)
	}
	if len(left) > 0 {
		t.Fatalf("%d goroutines of the client left after Close:\n%s", len(left), strings.Join(left, "\n\n"))
	}
}

func TestCloseIsFinal(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  client.Config
	}{{"http", client.Config{DisableRPC: true}}, {"rpc", client.Config{}}} {
		t.Run(tc.name, func(t *testing.T) {
			before := running()
			srv, c := startWith(t, fenceviewtest.Config{}, tc.cfg)
			ctx := context.Background()
			held := c.Mutex("held", "a")
			token, err := held.Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Fence(ctx, "held", token); err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			noClientGoroutines(t, before)

			// The lock still held stops being renewed; its work is told why.
			if !isDone(held.Context()) || !errors.Is(context.Cause(held.Context()), client.ErrClosed) {
				t.Fatalf("held lock's context: done %v, cause %v", isDone(held.Context()), context.Cause(held.Context()))
			}
			// Every call fails with ErrClosed and starts nothing.
			calls := map[string]func() error{
				"Fence":  func() error { _, err := c.Fence(ctx, "held", token); return err },
				"State":  func() error { _, err := c.State(ctx, "held"); return err },
				"Lock":   func() error { _, err := c.Mutex("other", "b").Lock(ctx); return err },
				"Unlock": func() error { return held.Unlock(ctx) },
				"Report": func() error {
					_, err := c.Report(ctx, client.Report{Resource: "held", Decision: guard.Decision{Accepted: true, Presented: token, Required: token}, Source: "t"})
					return err
				},
				"HighWaterMarks": func() error { _, err := c.HighWaterMarks(ctx); return err },
			}
			for name, call := range calls {
				if err := call(); !errors.Is(err, client.ErrClosed) {
					t.Errorf("%s after Close: %v, want ErrClosed", name, err)
				}
			}
			if err := c.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			noClientGoroutines(t, before)

			// Close did not release: the lease runs out on the server.
			other := srv.Client(t)
			if st, err := other.State(ctx, "held"); err != nil || !st.Locked || st.Holder != "a" {
				t.Fatalf("after Close the lock is %+v, %v; want still held by a until its lease ends", st, err)
			}
			srv.Clock().Advance(lease + time.Second)
			if _, err := other.Mutex("held", "b").TryLock(ctx, 0, time.Minute); err != nil {
				t.Fatalf("after the lease ran out: %v", err)
			}
		})
	}
}
