package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/clock"
)

// Retention bounds the history (fenceview.Retention).
type Retention = fenceview.Retention

// Defaults of pruning.
const (
	// DefaultPruneBatch is how many events one prune transaction deletes
	// at most: a few milliseconds of the write connection, so a commit
	// that arrives meanwhile waits for no more than that.
	DefaultPruneBatch = 100
	// PruneEvery is how often the background pruner looks for events to
	// prune.
	PruneEvery = time.Minute
)

type pruning struct {
	stop   chan struct{}
	exited chan struct{}
}

// StartPruning prunes the history to ret in the background until Close:
// at once, then every PruneEvery of clk, batch after batch until nothing
// is left to prune (PruneOnce). Set ObservePrune and PruneBatch before calling it.
func (db *DB) StartPruning(ret Retention, clk clock.Clock) {
	if ret.KeepsAll() || db.prune.stop != nil {
		return
	}
	db.prune = pruning{stop: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		defer close(db.prune.exited)
		for {
			if !db.pruneRound(ret, clk) {
				return
			}
			t := clk.NewTimer(PruneEvery)
			select {
			case <-db.prune.stop:
				t.Stop()
				return
			case <-t.C():
			}
		}
	}()
}

// pruneRound prunes batch after batch until nothing is left to prune, and
// reports whether to go on (false: Close was called).
func (db *DB) pruneRound(ret Retention, clk clock.Clock) bool {
	total := 0
	var err error
	for {
		var n int
		n, err = db.PruneOnce(context.Background(), ret, clk.Now())
		total += n
		if n == 0 || err != nil {
			break
		}
		select {
		case <-db.prune.stop:
			return false
		default:
		}
	}
	if db.ObservePrune != nil {
		db.ObservePrune(total, err)
	}
	return true
}

func (db *DB) stopPruning() {
	if db.prune.stop != nil {
		close(db.prune.stop)
		<-db.prune.exited
		db.prune.stop = nil
	}
}

// PruneOnce deletes one batch (at most PruneBatch events) of the oldest
// events ret no longer keeps at now, and returns how many it deleted.
//
// What to delete is found on the read pool, beside the commits; only the
// delete itself takes the write connection, in a short transaction of its
// own between two commits. So a commit never waits for the search, and
// for at most one batch's delete. Only folded events are pruned (those up
// to folded_seq): the fold indexes and counts the ones after it, and must
// find them.
func (db *DB) PruneOnce(ctx context.Context, ret Retention, now time.Time) (int, error) {
	if ret.KeepsAll() {
		return 0, nil
	}
	batch := int64(db.PruneBatch)
	if batch <= 0 {
		batch = DefaultPruneBatch
	}
	var lo, maxSeq, folded sql.NullInt64
	// Each bound in its own subquery: SQLite finds a lone MIN or MAX of
	// the key at one end of the B-tree, but scans the table for both.
	if err := db.read.QueryRowContext(ctx, `SELECT (SELECT MIN(seq) FROM events), (SELECT MAX(seq) FROM events), `+foldedSeq).Scan(&lo, &maxSeq, &folded); err != nil {
		return 0, err
	}
	if !lo.Valid {
		return 0, nil // no history
	}
	hi := min(lo.Int64+batch-1, folded.Int64)
	upTo := lo.Int64 - 1 // the last seq to delete
	if ret.MaxEvents > 0 {
		upTo = max(upTo, min(hi, maxSeq.Int64-ret.MaxEvents))
	}
	if ret.MaxAge > 0 && hi >= lo.Int64 {
		// The events before the first one still young enough, in seq
		// order: a reported decision may carry an older time than the
		// event before it, and waits its turn.
		var young int64
		if err := db.read.QueryRowContext(ctx, `SELECT COALESCE(MIN(seq), ?2 + 1) FROM events WHERE seq BETWEEN ?1 AND ?2 AND at >= ?3`,
			lo.Int64, hi, now.Add(-ret.MaxAge).UnixMilli()).Scan(&young); err != nil {
			return 0, err
		}
		upTo = max(upTo, young-1)
	}
	if upTo < lo.Int64 {
		return 0, nil
	}
	if db.prunePending != nil {
		db.prunePending() // tests: a batch chosen, not yet deleted
	}
	db.applyMu.Lock()
	defer db.applyMu.Unlock()
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM resource_events WHERE (resource_id, seq) IN
		(SELECT resource_id, seq FROM events WHERE seq BETWEEN ?1 AND ?2)`, lo.Int64, upTo); err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM events WHERE seq BETWEEN ?1 AND ?2`, lo.Int64, upTo)
	if err != nil {
		return 0, err
	}
	if ret.MaxAge > 0 {
		if _, err := tx.ExecContext(ctx, `DELETE FROM event_minutes WHERE minute < ?`, now.Add(-ret.MaxAge).UnixMilli()/60000); err != nil {
			return 0, err
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	db.committed(int(n)) // its WAL frames count toward the next checkpoint
	return int(n), nil
}
