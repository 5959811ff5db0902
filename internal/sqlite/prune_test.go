package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/benchenv"
	"github.com/fenceview/fenceview/internal/clock"
)

var pruneT0 = clock.TestDate.UTC().Truncate(time.Minute)

// pruneDB is a database holding n events, seq i recorded i minutes after
// pruneT0 on one of 4 resources, each commit folded (so every event may be
// pruned), with each resource's counter and mark at its last event's seq.
func pruneDB(t *testing.T, n int64) *DB {
	t.Helper()
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.FoldEvery = 1
	db.PruneBatch = 7 // many batches per round
	for seq := int64(1); seq <= n; seq++ {
		pruneCommit(t, db, seq)
	}
	return db
}

func pruneCommit(t *testing.T, db *DB, seq int64) {
	t.Helper()
	at := pruneT0.Add(time.Duration(seq) * time.Minute)
	r := fenceview.Resource{ResourceID: fmt.Sprintf("r%d", seq%4), LastToken: seq, HighWaterMark: seq, Accepted: seq, LastRejectionAt: at}
	e := fenceview.Event{Seq: seq, Type: fenceview.EventAccept, ResourceID: r.ResourceID, Token: seq, At: at}
	if seq%3 == 0 {
		e.Type, e.Reason, e.Presented, e.Required = fenceview.EventReject, "stale-token", seq-1, seq
	}
	if err := db.Apply(context.Background(), []*fenceview.Resource{&r}, []fenceview.Event{e}); err != nil {
		t.Fatal(err)
	}
}

// historyLeft is what is left of the history: events and their seq range,
// per-resource index rows, and per-minute counts before minute.
func historyLeft(t *testing.T, db *DB, beforeMinute int64) (events, lo, hi, indexed, minutes int64) {
	t.Helper()
	q := `SELECT (SELECT COUNT(*) FROM events), (SELECT COALESCE(MIN(seq), 0) FROM events), (SELECT COALESCE(MAX(seq), 0) FROM events),
		(SELECT COUNT(*) FROM resource_events), (SELECT COUNT(*) FROM event_minutes WHERE minute < ?)`
	if err := db.read.QueryRow(q, beforeMinute).Scan(&events, &lo, &hi, &indexed, &minutes); err != nil {
		t.Fatal(err)
	}
	return
}

// The background pruner, on an injected clock, deletes every event older
// than --history-retention with its index rows and per-minute counts, in
// batches, and leaves every resource's counter, mark and counts as they
// were; new commits and sequence numbers carry on.
func TestPruneByAgeKeepsMarksAndCounters(t *testing.T) {
	ctx := context.Background()
	db := pruneDB(t, 100)
	before, err := db.Resources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fake := clock.NewFake(pruneT0.Add(100 * time.Minute))
	rounds := make(chan [2]any, 1)
	db.ObservePrune = func(n int, err error) { rounds <- [2]any{n, err} }
	db.StartPruning(Retention{MaxAge: 30 * time.Minute}, fake)
	// The first round runs at once: seq i is at pruneT0 + i minutes, the
	// clock at +100, so 1..69 are older than 30 minutes.
	if r := <-rounds; r[0] != 69 || r[1] != nil {
		t.Fatalf("the first prune round deleted %v events (%v); want the 69 older than 30 minutes", r[0], r[1])
	}
	<-fake.TimerCreated() // the pruner waits for the next round
	fake.Advance(PruneEvery)
	if r := <-rounds; r[0] != 1 || r[1] != nil {
		t.Fatalf("a minute later, a prune round deleted %v events (%v); want 1", r[0], r[1])
	}
	cutoff := fake.Now().Add(-30 * time.Minute)
	events, lo, hi, indexed, minutes := historyLeft(t, db, cutoff.UnixMilli()/60000)
	// The clock is at +101: 71..100 are younger than 30 minutes.
	if events != 30 || lo != 71 || hi != 100 || indexed != 30 || minutes != 0 {
		t.Fatalf("left: %d events (%d..%d), %d index rows, %d old minute counts; want 30 (71..100), 30, 0", events, lo, hi, indexed, minutes)
	}
	after, err := db.Resources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("pruning changed the resources:\nbefore %+v\nafter  %+v", before, after)
	}
	if evs, err := db.ResourceEvents(ctx, "r1", 100); err != nil || len(evs) != 7 || evs[len(evs)-1].Seq != 73 {
		t.Fatalf("r1's history after pruning: %d events, %v; want 7, down to seq 73", len(evs), err)
	}
	pruneCommit(t, db, 101)
	if seq, err := db.MaxSeq(ctx); err != nil || seq != 101 {
		t.Fatalf("MaxSeq %d, %v; want 101", seq, err)
	}
}

// --history-max-events keeps the newest N; pruning everything by age
// leaves the sequence numbers where they were, across a restart, so no
// seq is ever given twice.
func TestPruneByCountAndSeqSurvivesAnEmptyHistory(t *testing.T) {
	ctx := context.Background()
	db := pruneDB(t, 100)
	now := pruneT0.Add(101 * time.Minute)
	total := 0
	for {
		n, err := db.PruneOnce(ctx, Retention{MaxEvents: 10}, now)
		if err != nil {
			t.Fatal(err)
		}
		if n > db.PruneBatch {
			t.Fatalf("one batch deleted %d events, more than PruneBatch %d", n, db.PruneBatch)
		}
		if n == 0 {
			break
		}
		total += n
	}
	if events, lo, hi, indexed, _ := historyLeft(t, db, 0); total != 90 || events != 10 || lo != 91 || hi != 100 || indexed != 10 {
		t.Fatalf("deleted %d; left %d events (%d..%d), %d index rows; want 90 deleted, 10 left (91..100)", total, events, lo, hi, indexed)
	}
	for {
		n, err := db.PruneOnce(ctx, Retention{MaxAge: time.Second}, now.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	if events, _, _, _, _ := historyLeft(t, db, 0); events != 0 {
		t.Fatalf("%d events left after pruning all", events)
	}
	path := db.Path
	db.Close()
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if seq, err := db.MaxSeq(ctx); err != nil || seq != 100 {
		t.Fatalf("MaxSeq after pruning every event and a restart: %d, %v; want 100", seq, err)
	}
	res, err := db.Resources(ctx)
	if err != nil || len(res) != 4 || res[0].LastToken < 97 {
		t.Fatalf("resources after pruning every event: %+v, %v", res, err)
	}
}

// Events not yet folded are left to the fold, which must index and count
// them; a restart folds them, and then they may go.
func TestPruneLeavesUnfoldedEvents(t *testing.T) {
	ctx := context.Background()
	db := pruneDB(t, 20)
	db.FoldEvery = 1 << 30
	for seq := int64(21); seq <= 40; seq++ {
		pruneCommit(t, db, seq)
	}
	for {
		n, err := db.PruneOnce(ctx, Retention{MaxEvents: 1}, pruneT0)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	if events, lo, _, _, _ := historyLeft(t, db, 0); events != 20 || lo != 21 {
		t.Fatalf("left %d events from %d; want the 20 unfolded ones, from 21", events, lo)
	}
}

// A prune batch chosen but not yet deleted holds nothing a commit needs:
// a commit made at that moment goes through, and the batch is deleted
// after it, leaving the new event alone.
func TestCommitGoesThroughWhileAPruneBatchIsPending(t *testing.T) {
	ctx := context.Background()
	db := pruneDB(t, 30)
	committed := false
	db.prunePending = func() {
		if !db.applyMu.TryLock() {
			t.Error("a pending prune batch holds the commit path")
			return
		}
		db.applyMu.Unlock()
		pruneCommit(t, db, 31)
		committed = true
	}
	n, err := db.PruneOnce(ctx, Retention{MaxEvents: 5}, pruneT0)
	if err != nil || n != 7 || !committed {
		t.Fatalf("prune deleted %d, %v; the commit beside it ran: %v", n, err, committed)
	}
	if events, lo, hi, _, _ := historyLeft(t, db, 0); events != 24 || lo != 8 || hi != 31 {
		t.Fatalf("left %d events (%d..%d); want 24 (8..31)", events, lo, hi)
	}
}

// One prune batch (FENCEVIEW_BENCH_BATCH events, default
// DefaultPruneBatch, with their index rows) from a history of
// FENCEVIEW_BENCH_ROWS events (default 200,000): about how long a commit
// that arrives meanwhile may wait for the write connection.
//
//	go test ./sqlite -run '^$' -bench PruneBatch -benchtime 100x
func BenchmarkPruneBatch(b *testing.B) {
	rows := benchenv.Int("FENCEVIEW_BENCH_ROWS", 200_000)
	db := historyDB(b, rows)
	batch := benchenv.Int("FENCEVIEW_BENCH_BATCH", DefaultPruneBatch)
	db.PruneBatch = batch
	if b.N*batch > rows {
		b.Fatalf("%d batches need more than %d events", b.N, rows)
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		n, err := db.PruneOnce(ctx, Retention{MaxEvents: int64(rows - (i+1)*batch)}, time.Now())
		if err != nil || n != batch {
			b.Fatalf("batch %d: %d deleted, %v", i, n, err)
		}
	}
}
