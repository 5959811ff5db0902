package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
)

// A fenced write appends its event alone, and readers, the fold and a
// reopen still see each resource exactly as committed: grants (whole rows)
// and fences (the mark, the last token, the counters, the last rejection
// and the alarm, carried by the event) interleaved on the same resources,
// in one commit and across commits, with folds after every commit, every
// few or never, and reopens in between (which forget what was last
// written, so the next change of each resource logs its whole row).
func TestFencedWriteAppendsOneRow(t *testing.T) {
	for _, c := range []struct{ every, remember int }{{1, maxLogged}, {5, maxLogged}, {1 << 30, maxLogged}, {1 << 30, 2}} {
		every := c.every
		t.Run(fmt.Sprintf("every=%d,remember=%d", every, c.remember), func(t *testing.T) {
			defer func(was int) { maxLogged = was }(maxLogged)
			maxLogged = c.remember // 2: forgotten every few commits
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "f.db")
			db, err := Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { db.Close() }()
			db.FoldEvery = every
			rng := rand.New(rand.NewPCG(2, uint64(every)))
			ids := []string{"a", "b", "c", "d", "e"}
			latest := map[string]fenceview.Resource{}
			var history []fenceview.Event
			start := time.UnixMilli(1_700_000_000_000).UTC()
			fencesAlone := 0
			for commit := 0; commit < 60; commit++ {
				if commit == 30 {
					db.Close()
					if db, err = Open(ctx, path); err != nil {
						t.Fatal(err)
					}
					db.FoldEvery = every
				}
				at := start.Add(time.Duration(commit) * 20 * time.Second)
				// The copy of each resource this commit changed: a group
				// commit writes each resource's latest copy once.
				changed := map[string]*fenceview.Resource{}
				var order []string
				var events []fenceview.Event
				var all []*fenceview.Resource
				for range 1 + rng.IntN(6) {
					id := ids[rng.IntN(len(ids))]
					r := latest[id]
					r.ResourceID = id
					e := fenceview.Event{Seq: int64(len(history) + len(events) + 1), ResourceID: id, At: at}
					switch k := rng.IntN(4); {
					case k == 0 || r.LastToken == 0:
						r.LastToken++
						r.Token, r.Holder, r.HoldCount, r.LeaseMs = r.LastToken, fmt.Sprintf("h%d", commit), 1, 30000
						r.GrantedAt, r.ExpiresAt = at, at.Add(30*time.Second)
						e.Type, e.Token, e.Holder = fenceview.EventGrant, r.LastToken, r.Holder
					case k == 1:
						r.Rejected++
						r.LastRejectionAt = at
						if rng.IntN(2) == 0 {
							r.CounterAlarm = r.LastToken + 7
						}
						e.Type, e.Reason, e.Presented, e.Required = fenceview.EventReject, "stale-token", 1, r.HighWaterMark
					default:
						r.Accepted++
						r.HighWaterMark = r.LastToken
						if rng.IntN(4) == 0 {
							r.LastToken++ // a proven report above the counter
						}
						e.Type, e.Token, e.Holder = fenceview.EventAccept, r.HighWaterMark, "w"
					}
					latest[id] = r
					if _, ok := changed[id]; !ok {
						order = append(order, id)
					}
					changed[id] = &r
					all = append(all, &r)
					events = append(events, e)
				}
				var rows []*fenceview.Resource
				for _, id := range order {
					rows = append(rows, changed[id])
				}
				if commit%3 == 2 {
					rows = all // every copy, in order: the newest of each must win
				}
				var before int
				if err := db.read.QueryRow(`SELECT COUNT(*) FROM events WHERE resource_state IS NOT NULL`).Scan(&before); err != nil {
					t.Fatal(err)
				}
				if err := db.Apply(ctx, rows, events); err != nil {
					t.Fatal(err)
				}
				var after int
				if err := db.read.QueryRow(`SELECT COUNT(*) FROM events WHERE resource_state IS NOT NULL`).Scan(&after); err != nil {
					t.Fatal(err)
				}
				fencesAlone += after - before
				history = append(history, events...)
				checkReads(t, db, latest, history)
			}
			if fencesAlone < 20 {
				t.Fatalf("only %d fenced writes appended their event alone", fencesAlone)
			}
			db.Close()
			if db, err = Open(ctx, path); err != nil {
				t.Fatal(err)
			}
			checkReads(t, db, latest, history)
		})
	}
}

// A grant appends its event alone, carrying the whole row; a fence on
// the resource then appends its event alone, carrying only what a fence
// changes; neither logs a resource row.
func TestFenceLogsNoResourceRow(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	db.FoldEvery = 1 << 30
	at := time.UnixMilli(1_700_000_000_000).UTC()
	r := fenceview.Resource{ResourceID: "x", LastToken: 1, Token: 1, Holder: "h", HoldCount: 1, LeaseMs: 1000, GrantedAt: at, ExpiresAt: at.Add(time.Second)}
	count := func(q string) (n int) {
		if err := db.read.QueryRow(q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	logRows := func() int { return count(`SELECT COUNT(*) FROM resource_log`) }
	if err := db.Apply(ctx, []*fenceview.Resource{&r}, []fenceview.Event{{Seq: 1, Type: fenceview.EventGrant, ResourceID: "x", Token: 1, At: at}}); err != nil {
		t.Fatal(err)
	}
	if n := logRows(); n != 0 {
		t.Fatalf("a grant logged %d rows", n)
	}
	if n := count(`SELECT COUNT(*) FROM events WHERE seq = 1 AND resource_row IS NOT NULL AND resource_state IS NULL`); n != 1 {
		t.Fatal("the grant's event carries no row")
	}
	f := r
	f.Accepted, f.HighWaterMark = 1, 1
	if err := db.Apply(ctx, []*fenceview.Resource{&f}, []fenceview.Event{{Seq: 2, Type: fenceview.EventAccept, ResourceID: "x", Token: 1, At: at}}); err != nil {
		t.Fatal(err)
	}
	if logRows() != 0 {
		t.Fatalf("a fence logged a resource row (%d rows)", logRows())
	}
	if n := count(`SELECT COUNT(*) FROM events WHERE seq = 2 AND resource_row IS NULL AND resource_state IS NOT NULL`); n != 1 {
		t.Fatal("the fence's event carries no state, or a whole row")
	}
	got, err := db.Resources(ctx)
	if err != nil || len(got) != 1 || got[0].Accepted != 1 || got[0].HighWaterMark != 1 || got[0].Holder != "h" {
		t.Fatalf("Resources = %+v (%v)", got, err)
	}
}

// When a commit holds several copies of a resource, the newest wins even
// if it matches the row last written and an earlier copy does not.
func TestNewestCopyWinsOverAFence(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	db.FoldEvery = 1 << 30
	at := time.UnixMilli(1_700_000_000_000).UTC()
	a := fenceview.Resource{ResourceID: "x", LastToken: 1, Token: 1, Holder: "h", HoldCount: 1, LeaseMs: 1000, GrantedAt: at, ExpiresAt: at.Add(time.Second)}
	if err := db.Apply(ctx, []*fenceview.Resource{&a}, []fenceview.Event{{Seq: 1, Type: fenceview.EventGrant, ResourceID: "x", Token: 1, At: at}}); err != nil {
		t.Fatal(err)
	}
	freed := fenceview.Resource{ResourceID: "x", LastToken: 1}
	again := a
	again.Accepted, again.HighWaterMark = 1, 1
	if err := db.Apply(ctx, []*fenceview.Resource{&freed, &again}, []fenceview.Event{
		{Seq: 2, Type: fenceview.EventRelease, ResourceID: "x", Token: 1, At: at},
		{Seq: 3, Type: fenceview.EventAccept, ResourceID: "x", Token: 1, At: at},
	}); err != nil {
		t.Fatal(err)
	}
	got, err := db.Resources(ctx)
	if err != nil || len(got) != 1 || got[0].Holder != "h" || got[0].Accepted != 1 {
		t.Fatalf("Resources = %+v (%v), want the newest copy %+v", got, err, again)
	}
}
