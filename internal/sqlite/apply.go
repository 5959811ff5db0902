package sqlite

import (
	"context"
	"database/sql/driver"
	"fmt"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/fenceview/fenceview"
)

// Apply writes resource rows and events in one durable transaction. When it
// returns nil, all of it is on disk; otherwise none of it is.
//
// It talks to the SQLite driver directly, below database/sql: the commit
// path runs two statements per change, and database/sql's argument
// conversion, result and locking per statement were most of the
// allocations of a grant.
func (db *DB) Apply(ctx context.Context, resources []*fenceview.Resource, events []fenceview.Event) error {
	db.applyMu.Lock()
	defer db.applyMu.Unlock()
	conn, err := db.write.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		c := dc.(*sqlite3.SQLiteConn)
		st, err := db.applyStmtsOf(c)
		if err != nil {
			return err
		}
		if db.catchUp.Swap(false) {
			// Finish the background checkpoint, so that this transaction
			// can restart the WAL (see checkpoints). Only the frames
			// committed while it ran are left to copy; a failure here
			// costs a larger WAL, never a change.
			c.ExecContext(ctx, checkpointSQL, nil)
		}
		tx, err := c.BeginTx(ctx, driver.TxOptions{}) // BEGIN IMMEDIATE (dsn's _txlock)
		if err != nil {
			return err
		}
		committed := false
		defer func() {
			if !committed {
				tx.Rollback()
			}
		}()
		for _, r := range resources {
			if err := st.logResource(ctx, r); err != nil {
				return err
			}
		}
		maxSeq := db.maxSeq
		for i := range events {
			e := &events[i]
			if err := st.insertEvent(ctx, e); err != nil {
				return err
			}
			if e.Seq <= db.folded {
				// A late event (a hole in a cluster node's copy, filled):
				// the folds have passed its place, so it is indexed and
				// counted now.
				for _, q := range lateEventSQL {
					if _, err := c.ExecContext(ctx, q, []driver.NamedValue{{Ordinal: 1, Value: e.Seq}}); err != nil {
						return err
					}
				}
			}
			maxSeq = max(maxSeq, e.Seq)
		}
		folded := db.folded
		every := db.FoldEvery
		if every <= 0 {
			every = DefaultFoldEvery
		}
		unfolded := db.unfolded + len(resources) + len(events)
		if unfolded >= every {
			if _, err := c.ExecContext(ctx, foldSQL, nil); err != nil {
				return fmt.Errorf("fold: %w", err)
			}
			unfolded, folded = 0, maxSeq
		}
		start := time.Now()
		if err := tx.Commit(); err != nil {
			return err
		}
		committed = true
		if db.ObserveCommit != nil {
			db.ObserveCommit(time.Since(start))
		}
		db.unfolded, db.maxSeq, db.folded = unfolded, maxSeq, folded
		db.committed(len(resources) + len(events))
		return nil
	})
}

// lateEventSQL indexes and counts one event (seq ?1) whose place the
// folds have passed, as a fold would have.
var lateEventSQL = [...]string{
	`INSERT OR IGNORE INTO resource_events (resource_id, seq) SELECT resource_id, seq FROM events WHERE seq = ?1`,
	`INSERT INTO event_minutes (minute, type, reason, n)
		SELECT at / 60000, type, CASE WHEN type = 'reject' THEN reason ELSE '' END, 1 FROM events WHERE seq = ?1
	ON CONFLICT (minute, type, reason) DO UPDATE SET n = n + 1`,
}

// applyStmts are Apply's statements, prepared once on the write
// connection, with their argument slices reused from change to change.
//
// They run through the driver's query path, not its exec path: a query
// resets, binds every argument and takes the first step in one cgo
// crossing, where an exec crosses once per argument (16 crossings for an
// event, 25 for a resource row). An INSERT's work is done by that first
// step; closing the rows resets the statement.
type applyStmts struct {
	conn                 *sqlite3.SQLiteConn
	logStmt, eventStmt   driver.StmtQueryContext
	logArgs, eventArgs   []driver.NamedValue
	closeLog, closeEvent func() error
}

const logResourceSQL = `INSERT INTO resource_log (` + resourceColumns + `)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

const insertEventSQL = `INSERT INTO events (` + eventColumns + `)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// applyStmtsOf returns the statements prepared on c, preparing them again
// if database/sql replaced the connection since.
func (db *DB) applyStmtsOf(c *sqlite3.SQLiteConn) (*applyStmts, error) {
	if db.stmts != nil && db.stmts.conn == c {
		return db.stmts, nil
	}
	db.stmts.close()
	db.stmts = nil
	// Checkpoints run in the background (see checkpoints), not inside
	// this connection's commits.
	if _, err := c.ExecContext(context.Background(), `PRAGMA wal_autocheckpoint = 0`, nil); err != nil {
		return nil, err
	}
	logStmt, err := c.Prepare(logResourceSQL)
	if err != nil {
		return nil, err
	}
	eventStmt, err := c.Prepare(insertEventSQL)
	if err != nil {
		logStmt.Close()
		return nil, err
	}
	db.stmts = &applyStmts{
		conn:    c,
		logStmt: logStmt.(driver.StmtQueryContext), eventStmt: eventStmt.(driver.StmtQueryContext),
		logArgs: namedValues(19), eventArgs: namedValues(13),
		closeLog: logStmt.Close, closeEvent: eventStmt.Close,
	}
	return db.stmts, nil
}

func (st *applyStmts) close() {
	if st != nil {
		st.closeLog()
		st.closeEvent()
	}
}

func namedValues(n int) []driver.NamedValue {
	v := make([]driver.NamedValue, n)
	for i := range v {
		v[i].Ordinal = i + 1
	}
	return v
}

// forget drops the values of args, keeping their ordinals: the reused
// slices hold no strings between commits.
func forget(args []driver.NamedValue) {
	for i := range args {
		args[i].Value = nil
	}
}

func (st *applyStmts) logResource(ctx context.Context, r *fenceview.Resource) error {
	var holder driver.Value
	if r.Holder != "" {
		holder = r.Holder
	}
	a := st.logArgs
	a[0].Value, a[1].Value, a[2].Value, a[3].Value = r.ResourceID, r.LastToken, r.HighWaterMark, holder
	a[4].Value, a[5].Value, a[6].Value = int64(r.HoldCount), r.Token, r.LeaseMs
	a[7].Value, a[8].Value = toMs(r.GrantedAt), toMs(r.ExpiresAt)
	a[9].Value, a[10].Value, a[11].Value = r.Accepted, r.Rejected, toMs(r.LastRejectionAt)
	a[12].Value, a[13].Value = r.CounterAlarm, r.OwnerKey
	a[14].Value, a[15].Value, a[16].Value = r.LockDelayMs, toMs(r.AvailableAt), int64(r.Permits)
	a[17].Value, a[18].Value = r.Election, r.Value
	err := run(ctx, st.logStmt, a)
	forget(a)
	return err
}

func (st *applyStmts) insertEvent(ctx context.Context, e *fenceview.Event) error {
	a := st.eventArgs
	a[0].Value, a[1].Value, a[2].Value, a[3].Value = e.Seq, e.Type, e.ResourceID, e.Token
	a[4].Value, a[5].Value, a[6].Value = e.Holder, e.Presented, e.Required
	a[7].Value, a[8].Value, a[9].Value = e.Reason, e.Source, e.At.UnixMilli()
	a[10].Value, a[11].Value, a[12].Value = e.Value, e.LockDelayMs, int64(e.Permits)
	err := run(ctx, st.eventStmt, a)
	forget(a)
	return err
}

// run executes an INSERT through the query path (see applyStmts).
func run(ctx context.Context, stmt driver.StmtQueryContext, args []driver.NamedValue) error {
	rows, err := stmt.QueryContext(ctx, args)
	if err != nil {
		return err
	}
	return rows.Close()
}
