package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/fenceview/fenceview/internal/auth"
)

var _ auth.Store = (*DB)(nil)

// InsertKey stores a new API key (its hash, never its secret).
func (db *DB) InsertKey(ctx context.Context, k auth.Stored) error {
	res, err := json.Marshal(k.Resources)
	if err != nil {
		return err
	}
	if k.Resources == nil {
		res = []byte("[]")
	}
	_, err = db.write.ExecContext(ctx, `INSERT INTO auth_keys (id, name, role, resources, secret_hash, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		k.ID, k.Name, string(k.Role), string(res), k.Hash[:], k.CreatedAt.UnixMilli())
	return err
}

// DeleteKey removes an API key; false when there was none.
func (db *DB) DeleteKey(ctx context.Context, id string) (bool, error) {
	r, err := db.write.ExecContext(ctx, `DELETE FROM auth_keys WHERE id = ?`, id)
	if err != nil {
		return false, err
	}
	n, err := r.RowsAffected()
	return n > 0, err
}

// Keys returns every API key with its hash.
func (db *DB) Keys(ctx context.Context) ([]auth.Stored, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT id, name, role, resources, secret_hash, created_at FROM auth_keys ORDER BY created_at, id`)
	return collect(rows, err, func(rows *sql.Rows) (auth.Stored, error) {
		var s auth.Stored
		var role, res string
		var hash []byte
		var created int64
		if err := rows.Scan(&s.ID, &s.Name, &role, &res, &hash, &created); err != nil {
			return s, err
		}
		if err := json.Unmarshal([]byte(res), &s.Resources); err != nil || len(hash) != len(s.Hash) {
			return s, fmt.Errorf("key %s: damaged row", s.ID)
		}
		if len(s.Resources) == 0 {
			s.Resources = nil
		}
		s.Role = auth.Role(role)
		copy(s.Hash[:], hash)
		s.CreatedAt = time.UnixMilli(created).UTC()
		return s, nil
	})
}

// prefixWhere keeps rows whose resource id starts with one of prefixes. A
// range per prefix rather than LIKE: no wildcards to escape, and the
// comparison is byte-wise, as Go's strings.HasPrefix.
func prefixWhere(where []string, args []any, prefixes []string) ([]string, []any) {
	ors := make([]string, 0, len(prefixes))
	for _, p := range prefixes {
		ors = append(ors, `(resource_id >= ? AND substr(resource_id, 1, length(?)) = ?)`)
		args = append(args, p, p, p)
	}
	return append(where, `(`+strings.Join(ors, ` OR `)+`)`), args
}
