package main

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fenceview/fenceview/internal/load"
)

// Plain SQL locking: a grant is one atomic UPDATE ... RETURNING that takes the
// next token when the lease ran out or the holder already has it; the
// guarded resource is a row written only when its stored token is not above
// the presented one. Every statement is its own durable commit.
const (
	pgSchemaGrants = `
CREATE TABLE IF NOT EXISTS lock_grants (
    resource       VARCHAR(160) PRIMARY KEY,
    holder_id      VARCHAR(80)  NOT NULL DEFAULT '',
    fencing_token  BIGINT       NOT NULL DEFAULT 0,
    granted_at     TIMESTAMPTZ  NOT NULL DEFAULT now(),
    expires_at     TIMESTAMPTZ  NOT NULL DEFAULT '-infinity'
)`
	pgSchemaData = `
CREATE TABLE IF NOT EXISTS fenced_data (
    resource       VARCHAR(160) PRIMARY KEY,
    fence_token    BIGINT       NOT NULL DEFAULT 0,
    value          BIGINT       NOT NULL DEFAULT 0
)`
	pgSeed     = `INSERT INTO lock_grants (resource) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING`
	pgSeedData = `INSERT INTO fenced_data (resource) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING`
	pgAcquire  = `
UPDATE lock_grants
   SET holder_id = $2, fencing_token = fencing_token + 1,
       granted_at = now(), expires_at = now() + $3 * INTERVAL '1 millisecond'
 WHERE resource = $1 AND (expires_at < now() OR holder_id = $2)
RETURNING fencing_token`
	pgRelease = `
UPDATE lock_grants SET expires_at = '-infinity'
 WHERE resource = $1 AND holder_id = $2 AND expires_at >= now()`
	pgFence = `
UPDATE fenced_data SET fence_token = $2, value = $3
 WHERE resource = $1 AND fence_token <= $2`
)

type pgDriver struct {
	dsn       string
	pool      *pgxpool.Pool
	resources []string
	leaseMs   int64
}

func newPostgres(dsn string) *pgDriver { return &pgDriver{dsn: dsn} }

func (d *pgDriver) Name() string { return "postgres" }

func (d *pgDriver) Prepare(ctx context.Context, s load.Setup) error {
	if d.pool == nil {
		cfg, err := pgxpool.ParseConfig(d.dsn)
		if err != nil {
			return err
		}
		cfg.MaxConns = int32(s.Clients)
		cfg.MinConns = int32(s.Clients)
		if d.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
			return err
		}
		for _, q := range []string{pgSchemaGrants, pgSchemaData} {
			if _, err := d.pool.Exec(ctx, q); err != nil {
				return err
			}
		}
	}
	d.resources = s.Resources
	d.leaseMs = s.Lease.Milliseconds()
	if _, err := d.pool.Exec(ctx, pgSeed, s.Resources); err != nil {
		return err
	}
	_, err := d.pool.Exec(ctx, pgSeedData, s.Resources)
	return err
}

func (d *pgDriver) NewClient(id int, holder string) (load.Client, error) {
	return newPeerClient(d, id, holder)
}

func (d *pgDriver) Close() error {
	if d.pool != nil {
		d.pool.Close()
	}
	return nil
}

func (d *pgDriver) acquire(ctx context.Context, w *writer, r int) (int64, error) {
	var tok int64
	err := d.pool.QueryRow(ctx, pgAcquire, d.resources[r], w.holder, d.leaseMs).Scan(&tok)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, load.ErrBusy
	}
	return tok, err
}

func (d *pgDriver) release(ctx context.Context, w *writer, r int) error {
	tag, err := d.pool.Exec(ctx, pgRelease, d.resources[r], w.holder)
	if err == nil && tag.RowsAffected() != 1 {
		err = errors.New("release: not lock owner")
	}
	return err
}

func (d *pgDriver) fence(ctx context.Context, w *writer, r int, token int64) (bool, error) {
	tag, err := d.pool.Exec(ctx, pgFence, d.resources[r], token, w.next())
	return err == nil && tag.RowsAffected() == 1, err
}
