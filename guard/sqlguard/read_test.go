package sqlguard_test

import (
	"context"
	"testing"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/sqlguard"
)

// An unsigned guarded read meets a write's rule on the row's mark: a read
// with a later token fences out the writer before it, and a later write
// the reader; a refused read changes nothing.
func TestTableRead(t *testing.T) {
	db, _ := openSQLite(t)
	ctx := context.Background()
	if _, err := db.Exec(`CREATE TABLE docs (id TEXT PRIMARY KEY, body TEXT NOT NULL DEFAULT '', fence_token BIGINT NOT NULL DEFAULT 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO docs (id, body) VALUES ('d', 'first')`); err != nil {
		t.Fatal(err)
	}
	tb, err := sqlguard.NewTable(sqlguard.TableConfig{Dialect: sqlguard.SQLite, Table: "docs", IDColumn: "id"})
	if err != nil {
		t.Fatal(err)
	}
	mark := func() (m int64) {
		db.QueryRow(`SELECT fence_token FROM docs WHERE id = 'd'`).Scan(&m)
		return m
	}
	if d, err := tb.Read(ctx, db, "d", 5); err != nil || !d.Accepted || mark() != 5 {
		t.Fatalf("a read with token 5: %+v %v, mark %d", d, err, mark())
	}
	if d, _ := tb.Update(ctx, db, "d", 4, sqlguard.Set("body", "late")); d.Accepted || d.Reason != guard.ReasonStale || d.Required != 5 {
		t.Fatalf("the writer before the read: %+v", d)
	}
	if d, _ := tb.Update(ctx, db, "d", 6, sqlguard.Set("body", "second")); !d.Accepted {
		t.Fatalf("a later writer: %+v", d)
	}
	if d, _ := tb.Read(ctx, db, "d", 5); d.Accepted || d.Required != 6 || mark() != 6 {
		t.Fatalf("the reader after it: %+v, mark %d", d, mark())
	}
	var body string
	db.QueryRow(`SELECT body FROM docs WHERE id = 'd'`).Scan(&body)
	if body != "second" {
		t.Fatalf("body %q", body)
	}
}
