// Package marktest gives the guard packages' tests the sqlguard.Marks they
// stand on: the marks table created on a real database, by default a new
// SQLite file in the test's temporary directory.
package marktest

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/fenceview/fenceview/guard/sqlguard"
)

// New returns the marks kept in table on db, with the table created.
func New(t testing.TB, db *sql.DB, d sqlguard.Dialect, table string) *sqlguard.Marks {
	t.Helper()
	m, err := sqlguard.NewMarks(db, d, table)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CreateTable(context.Background()); err != nil {
		t.Fatal(err)
	}
	return m
}

// SQLite returns marks in the table "fence_marks" of a new SQLite file,
// closed when the test ends.
func SQLite(t testing.TB) *sqlguard.Marks {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(t.TempDir(), "marks.db")+"?_busy_timeout=10000&_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return New(t, db, sqlguard.SQLite, "fence_marks")
}
