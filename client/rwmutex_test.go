package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/client/fenceviewtest"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/sqlguard"
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
	renewals(t, srv, events, 1)
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

// A reader's token through a table built from the client: it reads the
// row, and its write is refused as shared-token, the row untouched; the
// writer after the readers writes, and the reader's token is then stale.
func TestRWMutexTokensAtATable(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, fenceviewtest.Config{})
	db, table := inventoryFrom(t, c)
	rw := c.RWMutex("inventory:42", "reporter")
	if _, err := rw.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	reader := rw.Reader().Token()
	if d, err := table.ReadToken(ctx, db, 42, reader); err != nil || !d.Accepted {
		t.Fatalf("the reader's read: %+v %v", d, err)
	}
	if d, err := table.UpdateToken(ctx, db, 42, reader, sqlguard.Set("stock", 0)); err != nil || d.Reason != guard.ReasonSharedToken {
		t.Fatalf("the reader's write: %+v %v, want refused shared-token", d, err)
	}
	if err := rw.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	w := c.RWMutex("inventory:42", "restocker")
	if _, err := w.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if d, err := table.UpdateToken(ctx, db, 42, w.Writer().Token(), sqlguard.Set("stock", 20)); err != nil || !d.Accepted {
		t.Fatalf("the writer's write: %+v %v", d, err)
	}
	if d, err := table.ReadToken(ctx, db, 42, reader); err != nil || d.Reason != guard.ReasonStale {
		t.Fatalf("the ended phase's read: %+v %v, want stale", d, err)
	}
	var stock int64
	if err := db.QueryRow(`SELECT stock FROM inventory WHERE product_id = 42`).Scan(&stock); err != nil || stock != 20 {
		t.Fatalf("stock %d (%v), want 20", stock, err)
	}
}
