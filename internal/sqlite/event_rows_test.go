package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
)

// Commits of grants alone append their events alone (no resource row
// logged), and a restart reads back every holder, lease, token and
// counter exactly as committed.
func TestGrantsAloneSurviveRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "g.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	db.FoldEvery = 1 << 30
	at := time.UnixMilli(1_700_000_000_000).UTC()
	latest := map[string]fenceview.Resource{}
	var seq int64
	for commit := range 8 {
		var rows []*fenceview.Resource
		var events []fenceview.Event
		for j := range 32 {
			id := fmt.Sprintf("r%d", (commit*32+j)*7%50)
			r := latest[id]
			r.ResourceID = id
			seq++
			now := at.Add(time.Duration(seq) * time.Millisecond)
			r.LastToken++
			r.Token, r.Holder, r.HoldCount, r.LeaseMs = r.LastToken, fmt.Sprintf("holder-%d", seq), 1+j%2, 30000+seq
			r.GrantedAt, r.ExpiresAt = now, now.Add(time.Duration(r.LeaseMs)*time.Millisecond)
			r.OwnerKey = "key-" + id
			latest[id] = r
			rows = append(rows, &r)
			events = append(events, fenceview.Event{Seq: seq, Type: fenceview.EventGrant, ResourceID: id, Token: r.Token, Holder: r.Holder, At: now})
		}
		if err := db.Apply(ctx, rows, events); err != nil {
			t.Fatal(err)
		}
	}
	var logged int
	if err := db.read.QueryRow(`SELECT COUNT(*) FROM resource_log`).Scan(&logged); err != nil || logged != 0 {
		t.Fatalf("grants logged %d resource rows (%v), want none", logged, err)
	}
	var repeated int
	if err := db.read.QueryRow(`SELECT COUNT(*) FROM events WHERE resource_row LIKE '%holder-%'`).Scan(&repeated); err != nil || repeated != 0 {
		t.Fatalf("%d grants' rows repeat their event's holder (%v)", repeated, err)
	}
	checkResources(t, db, latest)
	db.Close()
	if db, err = Open(ctx, path); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkResources(t, db, latest)
}

func checkResources(t *testing.T, db *DB, latest map[string]fenceview.Resource) {
	t.Helper()
	rows, err := db.Resources(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(latest) {
		t.Fatalf("%d resources read, %d committed", len(rows), len(latest))
	}
	for _, r := range rows {
		if want := latest[r.ResourceID]; !reflect.DeepEqual(*r, want) {
			t.Fatalf("resource %s read as %+v, committed as %+v", r.ResourceID, *r, want)
		}
	}
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
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "e.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	db.FoldEvery = every
	rng := rand.New(rand.NewPCG(3, uint64(every)))
	ids := []string{"a", "b", "c", "d", "e", "s#0", "s#1"}
	holders := []string{"h1", "h2", `<a&b> "q" \ é ` + "\u2028\n\t\x01", "bad\xffutf8", "nul\x00"}
	latest := map[string]fenceview.Resource{}
	var history []fenceview.Event
	start := time.UnixMilli(1_700_000_000_000).UTC()
	carriedRows := 0
	for commit := range 60 {
		if commit == 30 {
			db.Close()
			if old {
				// The database as the code before migration 0011 left it.
				raw, err := sql.Open("sqlite3", dsn(path, false))
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
			if db, err = Open(ctx, path); err != nil {
				t.Fatal(err)
			}
			db.FoldEvery = every
			checkReads(t, db, latest, history)
		}
		at := start.Add(time.Duration(commit)*20*time.Second + time.Duration(rng.IntN(1000))*time.Millisecond)
		changed := map[string]*fenceview.Resource{}
		var order []string
		var events []fenceview.Event
		var all []*fenceview.Resource
		for range 1 + rng.IntN(6) {
			id := ids[rng.IntN(len(ids))]
			r := latest[id]
			r.ResourceID = id
			e := fenceview.Event{Seq: int64(len(history) + len(events) + 1), ResourceID: id, At: at}
			silent := false
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
				r.Rejected++
				r.LastRejectionAt = at
				if rng.IntN(2) == 0 {
					r.CounterAlarm = r.LastToken + 7
				}
				e.Type, e.Reason, e.Presented, e.Required = fenceview.EventReject, "stale-token", 1, r.HighWaterMark
			case k == 4: // a change with no event of its own on the resource
				r.Accepted += 10
				r.LeaseMs++
				silent = true
			default:
				r.Accepted++
				r.HighWaterMark = r.LastToken
				e.Type, e.Token, e.Holder = fenceview.EventAccept, r.HighWaterMark, "w"
			}
			latest[id] = r
			if _, ok := changed[id]; !ok {
				order = append(order, id)
			}
			changed[id] = &r
			all = append(all, &r)
			if !silent {
				events = append(events, e)
			}
		}
		var rows []*fenceview.Resource
		for _, id := range order {
			rows = append(rows, changed[id])
		}
		if commit%3 == 2 {
			rows = all // every copy, in order: the newest of each must win
		}
		if err := db.Apply(ctx, rows, events); err != nil {
			t.Fatal(err)
		}
		history = append(history, events...)
		checkReads(t, db, latest, history)
	}
	if err := db.read.QueryRow(`SELECT COUNT(*) FROM events WHERE resource_row IS NOT NULL`).Scan(&carriedRows); err != nil {
		t.Fatal(err)
	}
	if carriedRows < 10 {
		t.Fatalf("only %d events carried a whole row", carriedRows)
	}
	db.Close()
	if db, err = Open(ctx, path); err != nil {
		t.Fatal(err)
	}
	checkReads(t, db, latest, history)
}
