package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/fenceview/fenceview/internal/load"
)

// The fourth baseline is what fenceview would be with one durable SQLite
// commit per operation: the plain SQL locking of postgres.go on one connection in WAL mode with
// synchronous=FULL, in process (no network at all).
const (
	liteSchema = `
CREATE TABLE IF NOT EXISTS lock_grants (
    resource       TEXT    PRIMARY KEY,
    holder_id      TEXT    NOT NULL DEFAULT '',
    fencing_token  INTEGER NOT NULL DEFAULT 0,
    granted_at     INTEGER NOT NULL DEFAULT 0,
    expires_at     INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS fenced_data (
    resource       TEXT    PRIMARY KEY,
    fence_token    INTEGER NOT NULL DEFAULT 0,
    value          INTEGER NOT NULL DEFAULT 0
)`
	liteAcquire = `
UPDATE lock_grants
   SET holder_id = ?2, fencing_token = fencing_token + 1, granted_at = ?3, expires_at = ?3 + ?4
 WHERE resource = ?1 AND (expires_at < ?3 OR holder_id = ?2)
RETURNING fencing_token`
	liteRelease = `UPDATE lock_grants SET expires_at = 0 WHERE resource = ?1 AND holder_id = ?2 AND expires_at >= ?3`
	liteFence   = `UPDATE fenced_data SET fence_token = ?2, value = ?3 WHERE resource = ?1 AND fence_token <= ?2`
)

type sqliteDriver struct {
	path      string
	db        *sql.DB
	stmt      struct{ acquire, release, fence *sql.Stmt }
	resources []string
	leaseMs   int64
}

func newSQLite(dir string) *sqliteDriver {
	return &sqliteDriver{path: filepath.Join(dir, "peer.db")}
}

func (d *sqliteDriver) Name() string { return "sqlite" }

func (d *sqliteDriver) Prepare(ctx context.Context, s load.Setup) error {
	if d.db == nil {
		db, err := sql.Open("sqlite3", "file:"+d.path+"?_journal_mode=WAL&_synchronous=FULL&_busy_timeout=10000")
		if err != nil {
			return err
		}
		// One connection: SQLite has one writer anyway, and one commit per
		// statement is the baseline being measured.
		db.SetMaxOpenConns(1)
		d.db = db
		var mode string
		var sync int
		if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
			return err
		}
		if err := db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
			return err
		}
		if mode != "wal" || sync != 2 {
			return fmt.Errorf("journal_mode=%s synchronous=%d, want wal and 2 (FULL)", mode, sync)
		}
		if _, err := db.ExecContext(ctx, liteSchema); err != nil {
			return err
		}
		for _, p := range []struct {
			s   **sql.Stmt
			sql string
		}{{&d.stmt.acquire, liteAcquire}, {&d.stmt.release, liteRelease}, {&d.stmt.fence, liteFence}} {
			if *p.s, err = db.PrepareContext(ctx, p.sql); err != nil {
				return err
			}
		}
	}
	d.resources = s.Resources
	d.leaseMs = s.Lease.Milliseconds()
	// Rows for the resources, in one transaction (setup, not measured).
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, table := range []string{"lock_grants", "fenced_data"} {
		q := "INSERT OR IGNORE INTO " + table + " (resource) VALUES (?)"
		for _, r := range s.Resources {
			if _, err := tx.ExecContext(ctx, q, r); err != nil {
				return err
			}
		}
	}
	return tx.Commit()
}

func (d *sqliteDriver) NewClient(id int, holder string) (load.Client, error) {
	return newPeerClient(d, id, holder)
}

func (d *sqliteDriver) Close() error { return load.CloseOpened(d.db) }

func nowMs() int64 { return time.Now().UnixMilli() }

func (d *sqliteDriver) acquire(ctx context.Context, w *writer, r int) (int64, error) {
	var tok int64
	err := d.stmt.acquire.QueryRowContext(ctx, d.resources[r], w.holder, nowMs(), d.leaseMs).Scan(&tok)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, load.ErrBusy
	}
	return tok, err
}

func (d *sqliteDriver) release(ctx context.Context, w *writer, r int) error {
	res, err := d.stmt.release.ExecContext(ctx, d.resources[r], w.holder, nowMs())
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return errors.New("release: not lock owner")
	}
	return nil
}

func (d *sqliteDriver) fence(ctx context.Context, w *writer, r int, token int64) (bool, error) {
	res, err := d.stmt.fence.ExecContext(ctx, d.resources[r], token, w.next())
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}
