package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
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
			db := newCommitted(t, every)
			rng := rand.New(rand.NewPCG(2, uint64(every)))
			ids := []string{"a", "b", "c", "d", "e"}
			start := time.UnixMilli(1_700_000_000_000).UTC()
			fencesAlone := 0
			for commit := 0; commit < 60; commit++ {
				if commit == 30 {
					db.reopen()
				}
				at := start.Add(time.Duration(commit) * 20 * time.Second)
				for range 1 + rng.IntN(6) {
					id := ids[rng.IntN(len(ids))]
					r := db.resource(id)
					e := fenceview.Event{Seq: db.nextSeq(), ResourceID: id, At: at}
					switch k := rng.IntN(4); {
					case k == 0 || r.LastToken == 0:
						r.LastToken++
						r.Token, r.Holder, r.HoldCount, r.LeaseMs = r.LastToken, fmt.Sprintf("h%d", commit), 1, 30000
						r.GrantedAt, r.ExpiresAt = at, at.Add(30*time.Second)
						e.Type, e.Token, e.Holder = fenceview.EventGrant, r.LastToken, r.Holder
					case k == 1:
						rejectStale(rng, &r, &e, at)
					default:
						r.Accepted++
						r.HighWaterMark = r.LastToken
						if rng.IntN(4) == 0 {
							r.LastToken++ // a proven report above the counter
						}
						e.Type, e.Token, e.Holder = fenceview.EventAccept, r.HighWaterMark, "w"
					}
					db.change(r, &e)
				}
				const carried = `SELECT COUNT(*) FROM events WHERE resource_state IS NOT NULL`
				before := db.count(carried)
				db.commit(commit%3 == 2) // every third, every copy in order
				fencesAlone += db.count(carried) - before
			}
			if fencesAlone < 20 {
				t.Fatalf("only %d fenced writes appended their event alone", fencesAlone)
			}
			db.reopen()
			db.check()
		})
	}
}

// A grant appends its event alone, carrying the whole row; a fence on
// the resource then appends its event alone, carrying only what a fence
// changes; neither logs a resource row.
func TestFenceLogsNoResourceRow(t *testing.T) {
	db, r := grantedX(t)
	logRows := func() int { return db.count(`SELECT COUNT(*) FROM resource_log`) }
	if n := logRows(); n != 0 {
		t.Fatalf("a grant logged %d rows", n)
	}
	if n := db.count(`SELECT COUNT(*) FROM events WHERE seq = 1 AND resource_row IS NOT NULL AND resource_state IS NULL`); n != 1 {
		t.Fatal("the grant's event carries no row")
	}
	f := r
	f.Accepted, f.HighWaterMark = 1, 1
	db.change(f, &fenceview.Event{Seq: 2, Type: fenceview.EventAccept, ResourceID: "x", Token: 1, At: r.GrantedAt})
	db.commit(false)
	if logRows() != 0 {
		t.Fatalf("a fence logged a resource row (%d rows)", logRows())
	}
	if n := db.count(`SELECT COUNT(*) FROM events WHERE seq = 2 AND resource_row IS NULL AND resource_state IS NOT NULL`); n != 1 {
		t.Fatal("the fence's event carries no state, or a whole row")
	}
	got, err := db.Resources(context.Background())
	if err != nil || len(got) != 1 || got[0].Accepted != 1 || got[0].HighWaterMark != 1 || got[0].Holder != "h" {
		t.Fatalf("Resources = %+v (%v)", got, err)
	}
}

// When a commit holds several copies of a resource, the newest wins even
// if it matches the row last written and an earlier copy does not.
func TestNewestCopyWinsOverAFence(t *testing.T) {
	db, a := grantedX(t)
	at := a.GrantedAt
	again := a
	again.Accepted, again.HighWaterMark = 1, 1
	db.change(fenceview.Resource{ResourceID: "x", LastToken: 1}, &fenceview.Event{Seq: 2, Type: fenceview.EventRelease, ResourceID: "x", Token: 1, At: at})
	db.change(again, &fenceview.Event{Seq: 3, Type: fenceview.EventAccept, ResourceID: "x", Token: 1, At: at})
	db.commit(true)
	got, err := db.Resources(context.Background())
	if err != nil || len(got) != 1 || got[0].Holder != "h" || got[0].Accepted != 1 {
		t.Fatalf("Resources = %+v (%v), want the newest copy %+v", got, err, again)
	}
}

// grantedX is a database that never folds, with one commit: x granted to
// h with token 1, its lease a second.
func grantedX(t *testing.T) (*committed, fenceview.Resource) {
	t.Helper()
	db := newCommitted(t, 1<<30)
	at := time.UnixMilli(1_700_000_000_000).UTC()
	r := fenceview.Resource{ResourceID: "x", LastToken: 1, Token: 1, Holder: "h", HoldCount: 1, LeaseMs: 1000, GrantedAt: at, ExpiresAt: at.Add(time.Second)}
	db.change(r, &fenceview.Event{Seq: 1, Type: fenceview.EventGrant, ResourceID: "x", Token: 1, At: at})
	db.commit(false)
	return db, r
}
