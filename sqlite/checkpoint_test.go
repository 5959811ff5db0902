package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
)

// Commits never checkpoint themselves; the background checkpoint plus the
// next commit's catch-up restart the WAL, so it stays about
// checkpointAfter commits long however long the server writes.
func TestCheckpointsKeepTheWALShort(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.FoldEvery = 1 << 30 // one page-light commit after another, no folds
	ran := make(chan error, 1)
	db.ObserveCheckpoint = func(_ time.Duration, _ int, err error) { ran <- err }

	seq, since := int64(0), 0 // since: commits since the last wake
	commit := func() {
		t.Helper()
		seq++
		since = (since + 1) % checkpointAfter
		r := fenceview.Resource{ResourceID: fmt.Sprintf("r%d", seq%50), LastToken: seq, HighWaterMark: seq}
		e := fenceview.Event{Seq: seq, Type: fenceview.EventAccept, ResourceID: r.ResourceID, Token: seq, At: time.UnixMilli(1_700_000_000_000)}
		if err := db.Apply(ctx, []*fenceview.Resource{&r}, []fenceview.Event{e}); err != nil {
			t.Fatal(err)
		}
	}
	probe, err := sql.Open("sqlite3", dsn(path, false))
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	walFrames := func() int {
		t.Helper()
		var busy, log, done int
		if err := probe.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &done); err != nil {
			t.Fatal(err)
		}
		return log
	}

	for round := range 3 {
		for since < checkpointAfter-1 {
			commit()
		}
		select {
		case err := <-ran:
			t.Fatalf("round %d: a background checkpoint ran before %d commits: %v", round, checkpointAfter, err)
		default:
		}
		// The commit that completes checkpointAfter wakes the checkpoint.
		commit()
		if err := <-ran; err != nil {
			t.Fatalf("round %d: background checkpoint: %v", round, err)
		}
		// The next commit copies what is left and starts the WAL over:
		// the WAL holds only its own frames.
		commit()
		if n := walFrames(); n > 5 {
			t.Fatalf("round %d: the WAL holds %d frames after a checkpoint cycle; want only the last commit's", round, n)
		}
	}
	var autockpt int
	if err := db.write.QueryRow(`PRAGMA wal_autocheckpoint`).Scan(&autockpt); err != nil {
		t.Fatal(err)
	}
	if autockpt != 0 {
		t.Fatalf("wal_autocheckpoint = %d on the write connection; commits would checkpoint inline", autockpt)
	}
}

// A background checkpoint that cannot copy everything (here a reader holds
// an older snapshot, as commits made while it runs would) is finished by
// the next commit, which then starts the WAL over.
func TestNextCommitFinishesAnIncompleteCheckpoint(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.FoldEvery = 1 << 30
	ran := make(chan int, 1)
	db.ObserveCheckpoint = func(_ time.Duration, frames int, err error) {
		if err != nil {
			t.Error(err)
		}
		ran <- frames
	}
	seq := int64(0)
	commit := func() {
		t.Helper()
		seq++
		r := fenceview.Resource{ResourceID: fmt.Sprintf("r%d", seq%50), LastToken: seq, HighWaterMark: seq}
		e := fenceview.Event{Seq: seq, Type: fenceview.EventAccept, ResourceID: r.ResourceID, Token: seq, At: time.UnixMilli(1_700_000_000_000)}
		if err := db.Apply(ctx, []*fenceview.Resource{&r}, []fenceview.Event{e}); err != nil {
			t.Fatal(err)
		}
	}
	probe, err := sql.Open("sqlite3", dsn(path, true))
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	walFrames := func() int {
		t.Helper()
		var busy, log, done int
		if err := probe.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &done); err != nil {
			t.Fatal(err)
		}
		return log
	}

	for range checkpointAfter / 2 {
		commit()
	}
	// A reader's snapshot from here on holds the checkpoint back.
	reader, err := probe.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := reader.QueryRow(`SELECT COUNT(*) FROM events`).Scan(&n); err != nil || n != checkpointAfter/2 {
		t.Fatalf("reader sees %d events, %v", n, err)
	}
	for range checkpointAfter - checkpointAfter/2 {
		commit()
	}
	<-ran // it copied only what the reader's snapshot allows
	reader.Rollback()
	commit()
	if frames := walFrames(); frames > 5 {
		t.Fatalf("the WAL holds %d frames after the next commit; the incomplete checkpoint was not finished", frames)
	}
}
