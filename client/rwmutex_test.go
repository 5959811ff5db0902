package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/client/fenceviewtest"
)

// A reader's hold has its watchdog, as a Mutex's: renewed while held,
// its context cancelled with the refusal when an admin force-expires the
// lock. Its token says shared; a holder cannot turn a read hold into a
// write hold.
func TestRWMutexReaderWatchdog(t *testing.T) {
	ctx := context.Background()
	srv, c := startWith(t, fenceviewtest.Config{AdminToken: "s3cret"}, client.Config{AdminToken: "s3cret"})
	rw := c.RWMutex("report:7", "a")
	events := client.WatchdogEvents(rw.Reader())
	t1, err := rw.RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tok := rw.Reader().Token(); !tok.Shared || tok.Number != t1 {
		t.Fatalf("the reader's token %+v", tok)
	}
	t2, err := c.RWMutex("report:7", "b").RLock(ctx)
	if err != nil || t2 != t1 {
		t.Fatalf("b's read hold: %d %v; want the phase's token %d", t2, err, t1)
	}
	if _, err := rw.TryLock(ctx, 0, 0); !errors.Is(err, client.ErrHeld) {
		t.Fatalf("Lock while holding RLock: %v, want ErrHeld", err)
	}
	st, err := rw.State(ctx)
	if err != nil || !st.Shared || len(st.Holders) != 2 {
		t.Fatalf("state %+v %v", st, err)
	}
	held := rw.Reader().Context()
	expect(t, events, "armed")
	srv.Clock().Advance(lease / 3)
	expect(t, events, "renewed")
	expect(t, events, "armed")
	if err := c.ForceExpire(ctx, "report:7"); err != nil {
		t.Fatal(err)
	}
	srv.Clock().Advance(lease / 3)
	expect(t, events, "lost")
	<-held.Done()
	if cause := context.Cause(held); !errors.Is(cause, client.ErrLeaseLost) {
		t.Fatalf("cause = %v, want ErrLeaseLost", cause)
	}
	w, err := rw.Lock(ctx)
	if err != nil || w <= t1 {
		t.Fatalf("the write hold after the readers were forced out: %d %v", w, err)
	}
	if err := rw.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
