package sqlite

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
)

// Every field of a resource and an event is kept, before a fold (the log)
// and after it (the resources table), across a reopen: a field added to
// the domain and forgotten here would be lost at the next restart.
func TestEveryFieldIsKept(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "f.db")
	at := time.UnixMilli(1_780_000_000_123).UTC()
	r := fenceview.Resource{ResourceID: "jobs#0", HighWaterMark: 7, LastToken: 9, Holder: "h", OwnerKey: "k",
		HoldCount: 2, Token: 9, ExpiresAt: at, GrantedAt: at.Add(-time.Second), LeaseMs: 1000, Accepted: 3, Rejected: 4,
		LastRejectionAt: at, CounterAlarm: 11, LockDelayMs: 5000, AvailableAt: at.Add(time.Minute), Permits: 8,
		Election: true, Value: "10.0.0.1"}
	e := fenceview.Event{Seq: 1, Type: fenceview.EventExpire, ResourceID: "jobs#0", Token: 9, Holder: "h", Presented: 1,
		Required: 2, Reason: "lease-expired", Source: "s", At: at, Value: "v", LockDelayMs: 5000, Permits: 8}
	for _, fold := range []int{DefaultFoldEvery, 1} {
		db, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		db.FoldEvery = fold
		e.Seq++
		if err := db.Apply(ctx, []*fenceview.Resource{&r}, []fenceview.Event{e}); err != nil {
			t.Fatal(err)
		}
		db.Close()
		if db, err = Open(ctx, path); err != nil {
			t.Fatal(err)
		}
		rs, err := db.Resources(ctx)
		if err != nil || len(rs) != 1 || !reflect.DeepEqual(*rs[0], r) {
			t.Fatalf("fold every %d: resources %+v %v\nwant %+v", fold, rs, err, r)
		}
		evs, err := db.EventsAfter(ctx, e.Seq-1, "jobs#0", 10)
		if err != nil || len(evs) != 1 || !reflect.DeepEqual(evs[0], e) {
			t.Fatalf("fold every %d: events %+v %v\nwant %+v", fold, evs, err, e)
		}
		db.Close()
	}
}
