package sqlite

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"time"

	"github.com/fenceview/fenceview/internal/signing"
)

var _ signing.Store = (*DB)(nil)

// SigningKeys returns the issuer's signing keys.
func (db *DB) SigningKeys(ctx context.Context) ([]signing.Key, error) {
	rows, err := db.write.QueryContext(ctx, `SELECT private_key, created_at, active FROM signing_keys ORDER BY created_at DESC`)
	return collect(rows, err, func(rows *sql.Rows) (signing.Key, error) {
		var priv []byte
		var created int64
		var active bool
		if err := rows.Scan(&priv, &created, &active); err != nil {
			return signing.Key{}, err
		}
		return signing.NewKey(ed25519.PrivateKey(priv), time.UnixMilli(created).UTC(), active)
	})
}

// AddSigningKey stores k as the one active key.
func (db *DB) AddSigningKey(ctx context.Context, k signing.Key) error {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE signing_keys SET active = 0`); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO signing_keys (key_id, private_key, created_at, active) VALUES (?, ?, ?, 1)`,
		k.ID, []byte(k.Private()), k.CreatedAt.UnixMilli()); err != nil {
		return err
	}
	return tx.Commit()
}

// RemoveSigningKey deletes a key.
func (db *DB) RemoveSigningKey(ctx context.Context, id string) error {
	_, err := db.write.ExecContext(ctx, `DELETE FROM signing_keys WHERE key_id = ?`, id)
	return err
}
