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

// ckptHarness is a database whose commits are one change each, never
// folded, and a read-only probe connection beside it.
type ckptHarness struct {
	t     *testing.T
	db    *DB
	probe *sql.DB
	seq   int64
	ran   chan error // each background checkpoint's outcome
}

func newCkptHarness(t *testing.T) *ckptHarness {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.db")
	db, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.FoldEvery = 1 << 30 // one page-light commit after another, no folds
	h := &ckptHarness{t: t, db: db, ran: make(chan error, 1)}
	db.ObserveCheckpoint = func(_ time.Duration, _ int, err error) { h.ran <- err }
	if h.probe, err = sql.Open("sqlite3", dsn(path, true)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.probe.Close() })
	return h
}

func (h *ckptHarness) commit() {
	h.t.Helper()
	h.seq++
	r := fenceview.Resource{ResourceID: fmt.Sprintf("r%d", h.seq%50), LastToken: h.seq, HighWaterMark: h.seq}
	e := fenceview.Event{Seq: h.seq, Type: fenceview.EventAccept, ResourceID: r.ResourceID, Token: h.seq, At: time.UnixMilli(1_700_000_000_000)}
	if err := h.db.Apply(context.Background(), []*fenceview.Resource{&r}, []fenceview.Event{e}); err != nil {
		h.t.Fatal(err)
	}
}

// walFrames is how many frames the WAL holds now.
func (h *ckptHarness) walFrames() int {
	h.t.Helper()
	var busy, log, done int
	if err := h.probe.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &done); err != nil {
		h.t.Fatal(err)
	}
	return log
}

// Commits never checkpoint themselves; the background checkpoint plus the
// next commit's catch-up restart the WAL, so it stays about
// checkpointAfter commits long however long the server writes.
func TestCheckpointsKeepTheWALShort(t *testing.T) {
	h := newCkptHarness(t)
	since := 0 // commits since the last wake
	commit := func() {
		t.Helper()
		h.commit()
		since = (since + 1) % checkpointAfter
	}
	for round := range 3 {
		for since < checkpointAfter-1 {
			commit()
		}
		select {
		case err := <-h.ran:
			t.Fatalf("round %d: a background checkpoint ran before %d commits: %v", round, checkpointAfter, err)
		default:
		}
		// The commit that completes checkpointAfter wakes the checkpoint.
		commit()
		if err := <-h.ran; err != nil {
			t.Fatalf("round %d: background checkpoint: %v", round, err)
		}
		// The next commit copies what is left and starts the WAL over:
		// the WAL holds only its own frames.
		commit()
		if n := h.walFrames(); n > 5 {
			t.Fatalf("round %d: the WAL holds %d frames after a checkpoint cycle; want only the last commit's", round, n)
		}
	}
	var autockpt int
	if err := h.db.write.QueryRow(`PRAGMA wal_autocheckpoint`).Scan(&autockpt); err != nil {
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
	h := newCkptHarness(t)
	for range checkpointAfter / 2 {
		h.commit()
	}
	// A reader's snapshot from here on holds the checkpoint back.
	reader, err := h.probe.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := reader.QueryRow(`SELECT COUNT(*) FROM events`).Scan(&n); err != nil || n != checkpointAfter/2 {
		t.Fatalf("reader sees %d events, %v", n, err)
	}
	for range checkpointAfter - checkpointAfter/2 {
		h.commit()
	}
	if err := <-h.ran; err != nil { // it copied only what the reader's snapshot allows
		t.Fatal(err)
	}
	reader.Rollback()
	h.commit()
	if frames := h.walFrames(); frames > 5 {
		t.Fatalf("the WAL holds %d frames after the next commit; the incomplete checkpoint was not finished", frames)
	}
}
