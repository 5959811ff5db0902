// Package sqlite is fenceview's durable record: resources, tokens,
// high-water marks and the event history, in one SQLite file.
//
// Durability: the database runs in WAL mode with synchronous=FULL, so a
// transaction is on disk (the WAL fsynced) when Commit returns. The issuer
// answers a client only after that, which is what makes a token survive a
// SIGKILL at any instant.
package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/fenceview/fenceview"
)

//go:embed migration/*.sql
var migrationFS embed.FS

// DB is the fenceview database. Writes go through one connection (SQLite
// has one writer; a pool would only trade SQLITE_BUSY for nothing), reads
// through a pool that WAL lets run beside the writer.
//
// A commit only appends: each event to events, carrying its resource's
// new state (its whole row, or a fenced write's new mark and counters),
// and a changed resource's row to resource_log only when no event of the
// commit is on it (see carryRows). Every FoldEvery appended rows, the commit that
// crosses the mark also folds: the log's latest row of each resource goes
// into resources and the log is emptied, and the events since the last
// fold go into the per-resource history index and the per-minute counts.
// Readers see resources through the log (Resources), and a resource's
// history and the counts through the index plus the unfolded tail
// (ResourceEvents, EventsAfter, MinuteCounts), so a fold changes nothing
// anyone reads, only how many pages each commit writes.
type DB struct {
	Path  string
	write *sql.DB
	read  *sql.DB

	// ObserveCommit, when set before the first Apply, is told how long each
	// COMMIT took: with WAL and synchronous=FULL, that is the fsync.
	ObserveCommit func(time.Duration)

	// ObserveCheckpoint, when set before the first Apply, is told of each
	// background checkpoint (see checkpoints): how long it took, how many
	// frames the WAL held, and whether it failed.
	ObserveCheckpoint func(d time.Duration, walFrames int, err error)

	// FoldEvery is how many rows (logged resources plus events) commits
	// append before one of them folds; set it before the first Apply.
	// Larger means fewer pages written per change and a longer tail for a
	// resource's history to scan. Default DefaultFoldEvery.
	FoldEvery int

	// PruneBatch is how many events one prune transaction deletes at most
	// (default DefaultPruneBatch); ObservePrune is told of each round of
	// background pruning: how many events went, and whether it failed.
	// Set both before StartPruning.
	PruneBatch   int
	ObservePrune func(deleted int, err error)
	prune        pruning
	prunePending func() // tests: runs between choosing a prune batch and deleting it

	applyMu  sync.Mutex // Apply's transactions and what follows
	unfolded int        // rows appended since the last fold
	maxSeq   int64      // the highest event seq written
	folded   int64      // folded_seq: events up to it are indexed and counted
	stmts    *applyStmts
	// tried is the highest seq a commit of this process may have written
	// (see Apply). logged is each resource's row as last written in this
	// process, but for what a fence changes; eventAt, rowsBuf and carryBuf
	// are carryRows' reused scratch. All under applyMu.
	tried    int64
	logged   map[string]rowKey
	eventAt  map[string]int
	rowsBuf  []*fenceview.Resource
	carryBuf []carried
	pend     pending // what the next fold writes, under applyMu

	checkpoints
}

// checkpoints copy the WAL back into the database file away from the
// commit path. SQLite's automatic checkpoint runs inside the COMMIT that
// crosses 1000 pages: it writes those pages into the database file and
// fsyncs it, tens of milliseconds during which every waiting client waits
// too. Apply turns it off on the write connection; instead, every
// checkpointAfter commits it wakes a goroutine that checkpoints on a
// connection of its own (PASSIVE: beside the writer, never blocking it).
// That copy is never complete, since commits go on meanwhile, and SQLite
// restarts the WAL from its start only after a complete one; so the next
// Apply copies the few frames committed since, before it begins, and the
// WAL stays small: it never holds much more than one checkpoint's worth.
type checkpoints struct {
	ckpt      *sql.DB
	wake      chan struct{} // cap 1: wakes coalesce
	exited    chan struct{}
	catchUp   atomic.Bool // the background copy ran; Apply finishes it
	commits   int         // since the last wake, under applyMu
	appended  int         // rows since the last wake, under applyMu
	closeOnce sync.Once
}

// A background checkpoint starts after checkpointAfter commits or
// checkpointRows appended rows, whichever comes first: in pages, a little
// under SQLite's default of 1000.
const (
	checkpointAfter = 200
	checkpointRows  = 4096
)

const checkpointSQL = `PRAGMA wal_checkpoint(PASSIVE)`

func (db *DB) startCheckpoints() error {
	var err error
	if db.ckpt, err = sql.Open("sqlite3", dsn(db.Path, false)); err != nil {
		return err
	}
	db.ckpt.SetMaxOpenConns(1)
	db.wake = make(chan struct{}, 1)
	db.exited = make(chan struct{})
	go func() {
		defer close(db.exited)
		for range db.wake {
			// A failed checkpoint loses nothing: the frames stay in the
			// WAL, and the next wake copies them.
			start := time.Now()
			var busy, frames, copied int
			err := db.ckpt.QueryRow(checkpointSQL).Scan(&busy, &frames, &copied)
			if err == nil {
				db.catchUp.Store(true)
			}
			if db.ObserveCheckpoint != nil {
				db.ObserveCheckpoint(time.Since(start), frames, err)
			}
		}
	}()
	return nil
}

// committed counts a commit of rows toward the next background checkpoint.
// Called under applyMu.
func (db *DB) committed(rows int) {
	db.commits++
	db.appended += rows
	if db.commits < checkpointAfter && db.appended < checkpointRows {
		return
	}
	db.commits, db.appended = 0, 0
	select {
	case db.wake <- struct{}{}:
	default: // one is running; it will see these frames too
	}
}

func (db *DB) stopCheckpoints() error {
	if db.ckpt == nil {
		return nil
	}
	db.closeOnce.Do(func() { close(db.wake) })
	<-db.exited
	return db.ckpt.Close()
}

// DefaultFoldEvery folds about once a second at 30,000 changes a second.
// A fold writes about one page of the history's index per resource it
// covers, however many changes it folds, so a longer stride costs less per
// change: 32,768 rather than 8,192 took 6% off the server's CPU per RPC
// fenced write at 64 clients, and cut the write's p99 from 9-12 to 6-7 ms
// (bench/README.md, "A fold every 32,768 rows"). The price is the unfolded tail a resource's
// history scans: at most this many events, about 5 ms with a warm cache.
const DefaultFoldEvery = 32768

// resourceColumns are the columns of a resource row, in resources and in
// resource_log alike.
const resourceColumns = `resource_id, last_token, high_water_mark, holder, hold_count, grant_token, lease_ms,
	granted_at, expires_at, accepted, rejected, last_rejection_at, counter_alarm, owner,
	lock_delay_ms, available_at, permits, election, value, readers`

// foldSQL moves each changed resource's newest state into resources (see
// newestCTE) and empties the log, indexes the events after folded_seq by
// resource, in the order of each B-tree's keys so neighbouring changes
// share pages, and counts them into event_minutes.
const foldSQL = newestCTE + `
	INSERT INTO resources (` + resourceColumns + `)
		SELECT ` + resourceColumns + ` FROM n WHERE true
		ORDER BY resource_id
	` + foldUpsert + `;
	` + foldTailSQL

// foldUpsert is how a fold writes a resource's newest row over its old one.
const foldUpsert = `ON CONFLICT (resource_id) DO UPDATE SET
		last_token = excluded.last_token, high_water_mark = excluded.high_water_mark,
		holder = excluded.holder, hold_count = excluded.hold_count, grant_token = excluded.grant_token, lease_ms = excluded.lease_ms,
		granted_at = excluded.granted_at, expires_at = excluded.expires_at,
		accepted = excluded.accepted, rejected = excluded.rejected,
		last_rejection_at = excluded.last_rejection_at, counter_alarm = excluded.counter_alarm, owner = excluded.owner,
		lock_delay_ms = excluded.lock_delay_ms, available_at = excluded.available_at, permits = excluded.permits,
		election = excluded.election, value = excluded.value, readers = excluded.readers`

// foldTailSQL is the rest of a fold once the rows are in resources:
// the log emptied, the events indexed (foldIndexSQL) and counted
// (foldMinutesSQL), and folded_seq moved past them.
const foldTailSQL = foldIndexSQL + `;
	` + foldMinutesSQL + `;
	` + foldMarkSQL

// foldIndexSQL empties the log and indexes the events since the last fold
// by resource.
const foldIndexSQL = `DELETE FROM resource_log;
	INSERT OR IGNORE INTO resource_events (resource_id, seq)
		SELECT resource_id, seq FROM events WHERE seq > ` + foldedSeq + `
		ORDER BY resource_id, seq`

// foldMinutesSQL counts the events since the last fold into event_minutes.
const foldMinutesSQL = `INSERT INTO event_minutes (minute, type, reason, n)
		SELECT at / 60000, type, CASE WHEN type = 'reject' THEN reason ELSE '' END, COUNT(*) FROM events
		WHERE seq > ` + foldedSeq + ` GROUP BY 1, 2, 3
	` + minutesUpsert

// minutesUpsert adds a fold's counts to those of the same minute.
const minutesUpsert = `ON CONFLICT (minute, type, reason) DO UPDATE SET n = n + excluded.n`

// foldMarkSQL moves folded_seq past every event written.
const foldMarkSQL = `UPDATE meta SET value = MAX(CAST(value AS INTEGER), (SELECT COALESCE(MAX(seq), 0) FROM events)) WHERE key = 'folded_seq';`

// newestCTE names n: the newest state of each resource changed since the
// last fold, in resourceColumns. A commit writes a resource's new state in
// one of three ways (see Apply): a whole row appended to resource_log, with
// the seq of the commit's last event; a whole row carried by one of the
// commit's events on it (resource_row, migration 0011); or, when only what
// a fence changes changed, that alone carried by an event (resource_state,
// migration 0010). So the newest whole row is lg's, ev's or, when neither
// is there, the folded one in resources, whichever has the highest seq (a
// logged row wins a tie: it is as new as every event of its commit), and a
// fence's state with a higher seq still overrides the mark, the last token,
// the counters, the last rejection and the alarm.
const newestCTE = `WITH lg AS MATERIALIZED (SELECT ` + resourceColumns + `, seq FROM resource_log
		WHERE id IN (SELECT MAX(id) FROM resource_log GROUP BY resource_id)),
	ev AS MATERIALIZED (SELECT resource_id, MAX(seq) AS seq, resource_row AS r, at, holder AS eh FROM events
		WHERE seq > ` + foldedSeq + ` AND resource_row IS NOT NULL GROUP BY resource_id),
	st AS MATERIALIZED (SELECT resource_id, MAX(seq) AS seq, resource_state AS s FROM events
		WHERE seq > ` + foldedSeq + ` AND resource_state IS NOT NULL GROUP BY resource_id),
	w AS (SELECT ` + resourceColumns + `, seq FROM lg
			WHERE NOT EXISTS (SELECT 1 FROM ev WHERE ev.resource_id = lg.resource_id AND ev.seq > lg.seq)
		UNION ALL
		SELECT resource_id, ` + carriedRowColumns + `, seq FROM ev
			WHERE NOT EXISTS (SELECT 1 FROM lg WHERE lg.resource_id = ev.resource_id AND lg.seq >= ev.seq)
		UNION ALL
		SELECT ` + resourceColumns + `, 0 FROM resources
			WHERE resource_id IN (SELECT resource_id FROM st)
			AND resource_id NOT IN (SELECT resource_id FROM lg) AND resource_id NOT IN (SELECT resource_id FROM ev)),
	n AS (SELECT w.resource_id,
			CASE WHEN st.seq > w.seq THEN st.s ->> '$[1]' ELSE w.last_token END AS last_token,
			CASE WHEN st.seq > w.seq THEN st.s ->> '$[0]' ELSE w.high_water_mark END AS high_water_mark,
			w.holder, w.hold_count, w.grant_token, w.lease_ms, w.granted_at, w.expires_at,
			CASE WHEN st.seq > w.seq THEN st.s ->> '$[2]' ELSE w.accepted END AS accepted,
			CASE WHEN st.seq > w.seq THEN st.s ->> '$[3]' ELSE w.rejected END AS rejected,
			CASE WHEN st.seq > w.seq THEN st.s ->> '$[4]' ELSE w.last_rejection_at END AS last_rejection_at,
			CASE WHEN st.seq > w.seq THEN st.s ->> '$[5]' ELSE w.counter_alarm END AS counter_alarm,
			w.owner, w.lock_delay_ms, w.available_at, w.permits, w.election, w.value, w.readers
		FROM w LEFT JOIN st ON st.resource_id = w.resource_id)`

// carriedRowColumns reads an event's resource_row r (at, eh: the event's
// time and holder) as resourceColumns but the first; see resourceRow.
const carriedRowColumns = `COALESCE(r ->> '$[0]', 0), COALESCE(r ->> '$[7]', 0),
			CASE WHEN json_type(r, '$[2]') = 'integer' THEN eh ELSE r ->> '$[2]' END,
			COALESCE(r ->> '$[3]', 0), COALESCE(r ->> '$[1]', 0), COALESCE(r ->> '$[4]', 0),
			at + (r ->> '$[5]'), at + (r ->> '$[6]'),
			COALESCE(r ->> '$[8]', 0), COALESCE(r ->> '$[9]', 0), at + (r ->> '$[10]'), COALESCE(r ->> '$[11]', 0),
			COALESCE(r ->> '$[12]', ''), COALESCE(r ->> '$[13]', 0), at + (r ->> '$[14]'),
			COALESCE(r ->> '$[15]', 0), COALESCE(r ->> '$[16]', 0), COALESCE(r ->> '$[17]', ''), COALESCE(r ->> '$[18]', '')`

// foldedSeq is the last event in resource_events, as an SQL expression.
// It never goes down, even when pruning has emptied events: it is also
// the floor of the next sequence number (MaxSeq).
const foldedSeq = `(SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'folded_seq')`

// Open opens (creating if needed) and migrates the database at path.
func Open(ctx context.Context, path string) (*DB, error) { return OpenInit(ctx, path, nil) }

// OpenInit is Open, and a database it creates is given, by init, what
// every start must find in it (the server's issuer id and first signing
// key) before it appears at path; see create.
func OpenInit(ctx context.Context, path string, init func(context.Context, *DB) error) (*DB, error) {
	if path == "" || strings.HasPrefix(path, ":memory:") {
		return nil, errors.New("sqlite: a file path is required (fenceview's guarantees need a durable file)")
	}
	if isNew, err := absent(path); err != nil {
		return nil, err
	} else if isNew {
		if err := create(ctx, path, init); err != nil {
			return nil, fmt.Errorf("sqlite: creating %s: %w", path, err)
		}
	}
	return open(ctx, path)
}

// open opens and migrates the database at path.
func open(ctx context.Context, path string) (*DB, error) {
	db := &DB{Path: path, logged: map[string]rowKey{}, eventAt: map[string]int{}}
	var err error
	if db.write, err = sql.Open("sqlite3", dsn(path, false)); err != nil {
		return nil, err
	}
	db.write.SetMaxOpenConns(1)
	db.write.SetConnMaxLifetime(0)
	db.write.SetConnMaxIdleTime(0)
	if err := db.migrate(ctx); err != nil {
		db.write.Close()
		return nil, fmt.Errorf("sqlite: migrate %s: %w", path, err)
	}
	// Fold what the last run logged: its readers would see it through the
	// log anyway; this only starts the new run with an empty one.
	if err := db.fold(ctx); err != nil {
		db.write.Close()
		return nil, fmt.Errorf("sqlite: fold %s: %w", path, err)
	}
	if err := db.write.QueryRowContext(ctx, `SELECT `+foldedSeq).Scan(&db.folded); err != nil {
		db.write.Close()
		return nil, err
	}
	db.maxSeq = db.folded // the fold indexed every event
	if db.read, err = sql.Open("sqlite3", dsn(path, true)); err != nil {
		db.write.Close()
		return nil, err
	}
	db.read.SetMaxOpenConns(4)
	if err := db.startCheckpoints(); err != nil {
		db.read.Close()
		db.write.Close()
		return nil, err
	}
	return db, nil
}

// synchronous is SQLite's synchronous setting on every connection. FULL
// is what makes a commit durable when it returns: in WAL mode, NORMAL
// (mattn/go-sqlite3's default without it) fsyncs the WAL only at
// checkpoints, so a power cut loses the commits since, a SIGKILL none.
// Only the power-cut harness's build tag changes it (synchronous_normal.go).
var synchronous = "FULL"

// createNewPrivate creates an empty file at path, mode 0600, failing if
// anything (a file, a symlink) is there already.
func createNewPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

func dsn(path string, readOnly bool) string {
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", synchronous)
	q.Set("_busy_timeout", "5000")
	q.Set("_foreign_keys", "1")
	if readOnly {
		q.Set("_query_only", "1")
	} else {
		q.Set("_txlock", "immediate")
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// Close closes the database.
func (db *DB) Close() error {
	var errs []error
	db.stopPruning() // it takes applyMu for its deletes
	db.applyMu.Lock()
	db.stmts.close()
	db.stmts = nil
	errs = append(errs, db.stopCheckpoints()) // under applyMu: Apply sends no more wakes
	db.applyMu.Unlock()
	if db.read != nil {
		errs = append(errs, db.read.Close())
	}
	if db.write != nil {
		errs = append(errs, db.write.Close())
	}
	return errors.Join(errs...)
}

// fold folds the log in a transaction of its own.
func (db *DB) fold(ctx context.Context) error {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, foldSQL); err != nil {
		return err
	}
	return tx.Commit()
}

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error { return db.read.PingContext(ctx) }

// migrate applies every embedded migration not yet recorded, in order, each
// in its own transaction.
func (db *DB) migrate(ctx context.Context) error {
	if _, err := db.write.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)`); err != nil {
		return err
	}
	names, err := fs.Glob(migrationFS, "migration/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		if err := db.migrateFile(ctx, name); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// renamedMigrations maps a migration to the name it was applied under
// before a merge renumbered it (two branches both took 0004): a database
// migrated under the old name must not run it again.
var renamedMigrations = map[string]string{
	"migration/0007_event_minutes.sql": "migration/0004_event_minutes.sql",
}

func (db *DB) migrateFile(ctx context.Context, name string) error {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, name).Scan(&n); err != nil {
		return err
	} else if n > 0 {
		return nil
	}
	if was, ok := renamedMigrations[name]; ok {
		// Applied under its old name: record the new one, run nothing.
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, was).Scan(&n); err != nil {
			return err
		} else if n > 0 {
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, name, time.Now().UnixMilli()); err != nil {
				return err
			}
			return tx.Commit()
		}
	}
	body, err := fs.ReadFile(migrationFS, name)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, string(body)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, name, time.Now().UnixMilli()); err != nil {
		return err
	}
	return tx.Commit()
}

// Issuer returns the issuer id. With want set, it becomes (and stays) the
// stored id; otherwise the stored id is returned, created on first start.
func (db *DB) Issuer(ctx context.Context, want string) (string, error) {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer tx.Rollback()
	var id string
	err = tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'issuer'`).Scan(&id)
	switch {
	case err == sql.ErrNoRows || (err == nil && want != "" && want != id):
		if want != "" {
			id = want
		} else {
			var b [8]byte
			rand.Read(b[:])
			id = "fenceview-" + hex.EncodeToString(b[:])
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('issuer', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, id); err != nil {
			return "", err
		}
	case err != nil:
		return "", err
	}
	return id, tx.Commit()
}

// Resources returns every resource row.
func (db *DB) Resources(ctx context.Context) ([]*fenceview.Resource, error) {
	// The newest state of each resource changed since the last fold,
	// then the rows not changed since.
	rows, err := db.read.QueryContext(ctx, newestCTE+`
		SELECT resource_id, last_token, high_water_mark, COALESCE(holder, ''), hold_count, grant_token, lease_ms,
			granted_at, expires_at, accepted, rejected, last_rejection_at, counter_alarm, owner,
			lock_delay_ms, available_at, permits, election, value, readers FROM n
		UNION ALL
		SELECT resource_id, last_token, high_water_mark, COALESCE(holder, ''), hold_count, grant_token, lease_ms,
			granted_at, expires_at, accepted, rejected, last_rejection_at, counter_alarm, owner,
			lock_delay_ms, available_at, permits, election, value, readers
		FROM resources WHERE resource_id NOT IN (SELECT resource_id FROM n)`)
	return collect(rows, err, func(rows *sql.Rows) (*fenceview.Resource, error) {
		var r fenceview.Resource
		var granted, expires, lastRej, available sql.NullInt64
		var readers string
		if err := rows.Scan(&r.ResourceID, &r.LastToken, &r.HighWaterMark, &r.Holder, &r.HoldCount, &r.Token, &r.LeaseMs,
			&granted, &expires, &r.Accepted, &r.Rejected, &lastRej, &r.CounterAlarm, &r.OwnerKey,
			&r.LockDelayMs, &available, &r.Permits, &r.Election, &r.Value, &readers); err != nil {
			return nil, err
		}
		if err := decodeReaders(&r, readers); err != nil {
			return nil, err
		}
		r.GrantedAt, r.ExpiresAt, r.LastRejectionAt = fromMs(granted), fromMs(expires), fromMs(lastRej)
		r.AvailableAt = fromMs(available)
		return &r, nil
	})
}

// collect reads each row of a query's answer (rows, err) with scan, and
// closes rows.
func collect[T any](rows *sql.Rows, err error, scan func(*sql.Rows) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// MaxSeq returns the highest event sequence number recorded, 0 if none.
// Pruning may have deleted that event; folded_seq still remembers it, so
// sequence numbers never start over.
func (db *DB) MaxSeq(ctx context.Context) (int64, error) {
	var seq sql.NullInt64
	err := db.read.QueryRowContext(ctx, `SELECT MAX(COALESCE((SELECT MAX(seq) FROM events), 0), `+foldedSeq+`)`).Scan(&seq)
	return seq.Int64, err
}

const eventColumns = `seq, type, resource_id, token, holder, presented, required, reason, source, at,
	value, lock_delay_ms, permits, access`

// eventColumnsE is eventColumns of the table aliased e.
var eventColumnsE = "e." + strings.ReplaceAll(strings.ReplaceAll(eventColumns, "\n\t", " "), ", ", ", e.")

// Rejections returns rejections matching f, newest first by time, then by
// sequence number. Each filter has an index ordered that way (migration
// 0003), so a page costs about its own size whatever the history's.
func (db *DB) Rejections(ctx context.Context, f fenceview.RejectionFilter) ([]fenceview.Event, error) {
	where := []string{`type = 'reject'`}
	var args []any
	if f.ResourceID != "" {
		where, args = append(where, `resource_id = ?`), append(args, f.ResourceID)
	}
	if len(f.Prefixes) > 0 {
		where, args = prefixWhere(where, args, f.Prefixes)
	}
	if f.Reason != "" {
		where, args = append(where, `reason = ?`), append(args, f.Reason)
	}
	if f.Source != "" {
		where, args = append(where, `source = ?`), append(args, f.Source)
	}
	if !f.Since.IsZero() {
		where, args = append(where, `at >= ?`), append(args, f.Since.UnixMilli())
	}
	if !f.Until.IsZero() {
		where, args = append(where, `at < ?`), append(args, f.Until.UnixMilli())
	}
	if !f.Before.IsZero() {
		where, args = append(where, `(at, seq) < (?, ?)`), append(args, f.Before.At.UnixMilli(), f.Before.Seq)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	q := `SELECT ` + eventColumns + ` FROM events WHERE ` + strings.Join(where, ` AND `) +
		` ORDER BY at DESC, seq DESC LIMIT ` + strconv.Itoa(limit)
	return db.queryEvents(ctx, q, args...)
}

// EventsAfter returns up to limit events with seq > after, oldest first,
// optionally for one resource: the backlog a resuming stream client missed.
func (db *DB) EventsAfter(ctx context.Context, after int64, resourceID string, limit int) ([]fenceview.Event, error) {
	if resourceID != "" {
		// Indexed up to the last fold, scanned after it.
		return db.queryEvents(ctx, `
			SELECT * FROM (SELECT `+eventColumnsE+` FROM resource_events r JOIN events e ON e.seq = r.seq
				WHERE r.resource_id = ?1 AND r.seq > ?2 AND r.seq <= `+foldedSeq+` ORDER BY r.seq LIMIT ?3)
			UNION ALL
			SELECT * FROM (SELECT `+eventColumns+` FROM events
				WHERE seq > MAX(?2, `+foldedSeq+`) AND resource_id = ?1 ORDER BY seq LIMIT ?3)
			ORDER BY seq LIMIT ?3`, resourceID, after, limit)
	}
	return db.queryEvents(ctx, `SELECT `+eventColumns+` FROM events WHERE seq > ? ORDER BY seq LIMIT ?`, after, limit)
}

// ResourceEvents returns the newest events of one resource, newest first.
func (db *DB) ResourceEvents(ctx context.Context, resourceID string, limit int) ([]fenceview.Event, error) {
	return db.queryEvents(ctx, `
		SELECT * FROM (SELECT `+eventColumns+` FROM events
			WHERE seq > `+foldedSeq+` AND resource_id = ?1 ORDER BY seq DESC LIMIT ?2)
		UNION ALL
		SELECT * FROM (SELECT `+eventColumnsE+` FROM resource_events r JOIN events e ON e.seq = r.seq
			WHERE r.resource_id = ?1 AND r.seq <= `+foldedSeq+` ORDER BY r.seq DESC LIMIT ?2)
		ORDER BY seq DESC LIMIT ?2`, resourceID, limit)
}

// HolderEvents returns the newest events of one holder, newest first, up
// to limit, among the last scan events recorded, optionally only on
// resources under prefixes. It reads at most scan rows of the primary key
// rather than keep an index on holders, which every commit would pay for.
func (db *DB) HolderEvents(ctx context.Context, holder string, prefixes []string, scan, limit int) ([]fenceview.Event, error) {
	where := []string{`seq > (SELECT COALESCE(MAX(seq), 0) FROM events) - ?`, `holder = ?`}
	args := []any{scan, holder}
	if len(prefixes) > 0 {
		where, args = prefixWhere(where, args, prefixes)
	}
	return db.queryEvents(ctx, `SELECT `+eventColumns+` FROM events WHERE `+strings.Join(where, ` AND `)+
		` ORDER BY seq DESC LIMIT `+strconv.Itoa(max(limit, 1)), args...)
}

func (db *DB) queryEvents(ctx context.Context, q string, args ...any) ([]fenceview.Event, error) {
	rows, err := db.read.QueryContext(ctx, q, args...)
	out, err := collect(rows, err, func(rows *sql.Rows) (fenceview.Event, error) {
		var e fenceview.Event
		var at int64
		err := rows.Scan(&e.Seq, &e.Type, &e.ResourceID, &e.Token, &e.Holder, &e.Presented, &e.Required,
			&e.Reason, &e.Source, &at, &e.Value, &e.LockDelayMs, &e.Permits, &e.Access)
		e.At = time.UnixMilli(at).UTC()
		return e, err
	})
	if err == nil && out == nil {
		out = []fenceview.Event{} // a list, never null
	}
	return out, err
}

func toMs(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

func fromMs(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.UnixMilli(v.Int64).UTC()
}
