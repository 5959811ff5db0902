// Package sqlitedb opens the SQLite files the examples keep their guarded
// rows in, and names the guarded tables in them.
package sqlitedb

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"

	_ "github.com/mattn/go-sqlite3"

	"github.com/fenceview/fenceview/guard/sqlguard"
)

// Table is a guarded SQLite table (sqlguard.NewTable) named name, keyed by key, for the examples'
// constant table and key names: it panics on a name sqlguard refuses, as
// regexp.MustCompile does on a bad constant pattern.
func Table(name, key string) *sqlguard.Table {
	t, err := sqlguard.NewTable(sqlguard.TableConfig{Dialect: sqlguard.SQLite, Table: name, IDColumn: key})
	if err != nil {
		panic(err)
	}
	return t
}

// Open opens the SQLite file at *path, first setting *path to a file in a
// new temporary directory when it is empty (no -db flag given). The file
// is in WAL mode and waits out a busy writer (the examples write from
// several goroutines or processes); schema, unless empty, runs on it.
// closeAll closes the database and removes the temporary directory.
func Open(ctx context.Context, path *string, schema string) (db *sql.DB, closeAll func(), err error) {
	remove := func() {}
	if *path == "" {
		dir, err := os.MkdirTemp("", "fenceview-example-")
		if err != nil {
			return nil, nil, err
		}
		remove = func() { os.RemoveAll(dir) }
		*path = filepath.Join(dir, "example.db")
	}
	db, err = sql.Open("sqlite3", "file:"+*path+"?_busy_timeout=5000&_journal_mode=WAL")
	if err == nil && schema != "" {
		if _, err = db.ExecContext(ctx, schema); err != nil {
			db.Close()
		}
	}
	if err != nil {
		remove()
		return nil, nil, err
	}
	return db, func() { db.Close(); remove() }, nil
}
