// Package sqlitedb opens the SQLite files the examples keep their guarded
// rows in.
package sqlitedb

import (
	"context"
	"database/sql"

	_ "github.com/mattn/go-sqlite3"
)

// Open opens the SQLite file at path, in WAL mode and waiting out a busy
// writer (the examples write from several goroutines or processes), and
// runs schema on it unless schema is empty.
func Open(ctx context.Context, path, schema string) (*sql.DB, error) {
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000&_journal_mode=WAL")
	if err != nil {
		return nil, err
	}
	if schema != "" {
		if _, err := db.ExecContext(ctx, schema); err != nil {
			db.Close()
			return nil, err
		}
	}
	return db, nil
}
