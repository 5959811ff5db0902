package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
)

// Commits of grants alone append their events alone (no resource row
// logged), and a restart reads back every holder, lease, token and
// counter exactly as committed.
func TestGrantsAloneSurviveRestart(t *testing.T) {
	db := newCommitted(t, 1<<30)
	at := time.UnixMilli(1_700_000_000_000).UTC()
	for commit := range 8 {
		for j := range 32 {
			id := fmt.Sprintf("r%d", (commit*32+j)*7%50)
			r := db.resource(id)
			seq := db.nextSeq()
			now := at.Add(time.Duration(seq) * time.Millisecond)
			r.LastToken++
			r.Token, r.Holder, r.HoldCount, r.LeaseMs = r.LastToken, fmt.Sprintf("holder-%d", seq), 1+j%2, 30000+seq
			r.GrantedAt, r.ExpiresAt = now, now.Add(time.Duration(r.LeaseMs)*time.Millisecond)
			r.OwnerKey = "key-" + id
			db.change(r, &fenceview.Event{Seq: seq, Type: fenceview.EventGrant, ResourceID: id, Token: r.Token, Holder: r.Holder, At: now})
		}
		db.commit(true) // every copy, in order: the newest of each must win
	}
	if logged := db.count(`SELECT COUNT(*) FROM resource_log`); logged != 0 {
		t.Fatalf("grants logged %d resource rows, want none", logged)
	}
	if repeated := db.count(`SELECT COUNT(*) FROM events WHERE resource_row LIKE '%holder-%'`); repeated != 0 {
		t.Fatalf("%d grants' rows repeat their event's holder", repeated)
	}
	db.reopen()
	db.check()
}

// Every kind of change (grants, renewals, releases, fences, changes with
// no event on their resource, strings JSON escapes or cannot carry)
// interleaved on a few resources, across commits and in one, with folds
// after every commit, every few or never, and reopens between; with old,
// the first half is written as the code before migration 0011 wrote it,
// into a database without that migration, which the reopen migrates: a
// database from the field keeps every state.
func TestEveryChangeAppendsOneRow(t *testing.T) {
	for _, old := range []bool{false, true} {
		for _, every := range []int{1, 5, 1 << 30} {
			t.Run(fmt.Sprintf("old=%v,every=%d", old, every), func(t *testing.T) {
				testEveryChange(t, old, every)
			})
		}
	}
	// The folds above write what the commits since the last one gathered
	// (pending); these read it all back from the tables, as a fold after
	// a restart or a failed commit does.
	defer func() { foldFromTables = false }()
	foldFromTables = true
	for _, every := range []int{1, 5} {
		t.Run(fmt.Sprintf("tables,every=%d", every), func(t *testing.T) {
			testEveryChange(t, false, every)
		})
	}
}

// TestFailedCommitIsNotFolded: a change whose commit failed never reaches
// resources or the counts, though the next fold is the commit's after it.
func TestFailedCommitIsNotFolded(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	db.FoldEvery = 2 // the second commit to succeed folds
	at := time.UnixMilli(1_700_000_000_000).UTC()
	grant := func(id string, token int64) error {
		r := &fenceview.Resource{ResourceID: id, LastToken: token, Token: token, Holder: "h", HoldCount: 1, LeaseMs: 1000,
			GrantedAt: at, ExpiresAt: at.Add(time.Second)}
		return db.Apply(ctx, []*fenceview.Resource{r},
			[]fenceview.Event{{Seq: token, Type: fenceview.EventGrant, ResourceID: id, Token: token, Holder: "h", At: at}})
	}
	if err := grant("a", 1); err != nil {
		t.Fatal(err)
	}
	defer func() { beforeCommit = nil }()
	beforeCommit = func() error { return errors.New("the disk is gone") }
	if err := grant("a", 2); err == nil {
		t.Fatal("Apply succeeded through a failed commit")
	}
	beforeCommit = nil
	if err := grant("b", 3); err != nil {
		t.Fatal(err)
	}
	if db.unfolded != 0 || db.pend.lost {
		t.Fatalf("no fold after two commits: unfolded %d, pending lost %v", db.unfolded, db.pend.lost)
	}
	var tokens []int64
	rows, err := db.read.QueryContext(ctx, `SELECT last_token FROM resources ORDER BY resource_id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var tok int64
		rows.Scan(&tok)
		tokens = append(tokens, tok)
	}
	rows.Close()
	if !slices.Equal(tokens, []int64{1, 3}) {
		t.Fatalf("resources folded with last tokens %v, want [1 3]: the failed commit's grant of a went in", tokens)
	}
	var n int64
	if err := db.read.QueryRowContext(ctx, `SELECT SUM(n) FROM event_minutes`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("event_minutes count %d events (%v), want 2", n, err)
	}
}

func testEveryChange(t *testing.T, old bool, every int) {
	defer func() { writeOld = false }()
	writeOld = old
	db := newCommitted(t, every)
	rng := rand.New(rand.NewPCG(3, uint64(every)))
	ids := []string{"a", "b", "c", "d", "e", "s#0", "s#1"}
	holders := []string{"h1", "h2", `<a&b> "q" \ é ` + "\u2028\n\t\x01", "bad\xffutf8", "nul\x00"}
	start := time.UnixMilli(1_700_000_000_000).UTC()
	for commit := range 60 {
		if commit == 30 {
			db.Close()
			if old {
				// The database as the code before migration 0011 left it.
				raw, err := sql.Open("sqlite3", dsn(db.path, false))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := raw.Exec(`ALTER TABLE events DROP COLUMN resource_row;
					DELETE FROM schema_migrations WHERE version = 'migration/0011_event_rows.sql'`); err != nil {
					t.Fatal(err)
				}
				raw.Close()
				writeOld = false
			}
			db.open()
			db.check()
		}
		at := start.Add(time.Duration(commit)*20*time.Second + time.Duration(rng.IntN(1000))*time.Millisecond)
		for range 1 + rng.IntN(6) {
			id := ids[rng.IntN(len(ids))]
			r := db.resource(id)
			e := &fenceview.Event{Seq: db.nextSeq(), ResourceID: id, At: at}
			switch k := rng.IntN(7); {
			case k == 0 || r.LastToken == 0: // a grant
				r.LastToken++
				r.Token, r.Holder, r.HoldCount, r.LeaseMs = r.LastToken, holders[rng.IntN(len(holders))], 1, int64(1000*(1+rng.IntN(60)))
				r.GrantedAt, r.ExpiresAt = at.Add(-time.Duration(rng.IntN(5))*time.Millisecond), at.Add(time.Duration(r.LeaseMs)*time.Millisecond)
				r.AvailableAt = time.Time{}
				if rng.IntN(3) == 0 {
					r.OwnerKey = holders[rng.IntN(len(holders))]
				}
				if rng.IntN(3) == 0 {
					r.LockDelayMs = int64(rng.IntN(500))
				}
				if id == "s#0" {
					r.Permits = 2
				}
				if rng.IntN(4) == 0 {
					r.Election, r.Value = true, holders[rng.IntN(len(holders))]
				}
				e.Type, e.Token, e.Holder = fenceview.EventGrant, r.LastToken, r.Holder
			case k == 1 && r.Holder != "": // a renewal, perhaps re-entered
				r.ExpiresAt = at.Add(time.Duration(r.LeaseMs) * time.Millisecond)
				if rng.IntN(2) == 0 {
					r.HoldCount++
				}
				e.Type, e.Token, e.Holder = fenceview.EventRenew, r.Token, r.Holder
			case k == 2: // a release
				e.Type, e.Token, e.Holder = fenceview.EventRelease, r.Token, r.Holder
				r.Holder, r.HoldCount, r.GrantedAt, r.ExpiresAt, r.Value = "", 0, time.Time{}, time.Time{}, ""
				if r.LockDelayMs > 0 {
					r.AvailableAt = at.Add(time.Duration(r.LockDelayMs) * time.Millisecond)
				}
			case k == 3:
				rejectStale(rng, &r, e, at)
			case k == 4: // a change with no event of its own on the resource
				r.Accepted += 10
				r.LeaseMs++
				e = nil // no event of its own
			default:
				r.Accepted++
				r.HighWaterMark = r.LastToken
				e.Type, e.Token, e.Holder = fenceview.EventAccept, r.HighWaterMark, "w"
			}
			db.change(r, e)
		}
		db.commit(commit%3 == 2) // every third, every copy in order
	}
	if carriedRows := db.count(`SELECT COUNT(*) FROM events WHERE resource_row IS NOT NULL`); carriedRows < 10 {
		t.Fatalf("only %d events carried a whole row", carriedRows)
	}
	db.reopen()
	db.check()
}

// rejectStale records on r a stale token refused at at (one time in two
// raising a counter alarm) and makes e its event.
func rejectStale(rng *rand.Rand, r *fenceview.Resource, e *fenceview.Event, at time.Time) {
	r.Rejected++
	r.LastRejectionAt = at
	if rng.IntN(2) == 0 {
		r.CounterAlarm = r.LastToken + 7
	}
	e.Type, e.Reason, e.Presented, e.Required = fenceview.EventReject, "stale-token", 1, r.HighWaterMark
}
