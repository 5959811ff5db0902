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
