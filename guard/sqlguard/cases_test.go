package sqlguard_test

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/sqlguard"
	"github.com/fenceview/fenceview/internal/guardtest"
)

// The shared table of guard cases, on a real SQLite file.
func TestCasesSQLite(t *testing.T) {
	db, _ := openSQLite(t)
	runCases(t, sqlguard.SQLite, db)
}

// Marks makes the same decisions as the in-memory guard on the same inputs.
func TestMarksAgreeWithGuard(t *testing.T) {
	db, _ := openSQLite(t)
	m := newMarks(t, db)
	// Marks does not read the previous mark on acceptance.
	g := guardtest.Agree(t, []guardtest.Step{
		{Resource: "a", Token: 5}, {Resource: "a", Token: 5}, {Resource: "a", Token: 4},
		{Resource: "a", Token: 6}, {Resource: "b", Token: 1}, {Resource: "a", Token: 5},
		{Resource: "b", Token: 1}, {Resource: "b", Token: 0}, {Resource: "orders/42 ünï", Token: 9},
		{Resource: "orders/42 ünï", Token: 8}, {Resource: "", Token: 3}, {Resource: "x\n", Token: 3},
		{Resource: strings.Repeat("r", guard.MaxResourceIDLen+1), Token: 3},
	}, false, m.Check)
	for res, want := range g.Marks() {
		if got, err := m.HighWater(context.Background(), res); err != nil || got != want {
			t.Fatalf("HighWater(%q) = %d, %v; want %d", res, got, err, want)
		}
	}
}

// runCases runs guardtest's table against both sqlguard shapes on db: a
// row with its own token column (Table) and a value fenced by Marks in the
// same transaction.
func runCases(t *testing.T, d sqlguard.Dialect, db *sql.DB) {
	ctx := context.Background()
	for _, q := range []string{
		`CREATE TABLE case_rows (id BIGINT PRIMARY KEY, val VARCHAR(100) NOT NULL DEFAULT '', fence_token BIGINT NOT NULL DEFAULT 0)`,
		`CREATE TABLE case_values (id VARCHAR(160) PRIMARY KEY, val VARCHAR(100) NOT NULL DEFAULT '')`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	tbl, err := sqlguard.NewTable(sqlguard.TableConfig{Dialect: d, Table: "case_rows", IDColumn: "id"})
	if err != nil {
		t.Fatal(err)
	}
	marks, err := sqlguard.NewMarks(db, d, "case_marks")
	if err != nil {
		t.Fatal(err)
	}
	if err := marks.CreateTable(ctx); err != nil {
		t.Fatal(err)
	}
	var next atomic.Int64
	t.Run("cases/Table", func(t *testing.T) {
		guardtest.Run(t, func(t *testing.T) guardtest.Resource {
			id := next.Add(1)
			if _, err := db.ExecContext(ctx, fmt.Sprintf(`INSERT INTO case_rows (id) VALUES (%d)`, id)); err != nil {
				t.Fatal(err)
			}
			return &rowResource{d: d, db: db, tbl: tbl, id: id}
		})
	})
	t.Run("cases/Marks", func(t *testing.T) {
		guardtest.Run(t, func(t *testing.T) guardtest.Resource {
			id := "case:" + strconv.FormatInt(next.Add(1), 10)
			if _, err := db.ExecContext(ctx, `INSERT INTO case_values (id) VALUES ('`+id+`')`); err != nil {
				t.Fatal(err)
			}
			return &marksResource{d: d, db: db, marks: marks, id: id}
		})
	})
}

func placeholder(d sqlguard.Dialect, n int) string {
	if d == sqlguard.PostgreSQL {
		return "$" + strconv.Itoa(n)
	}
	return "?"
}

// rowResource is one row of case_rows fenced by Table.Update.
type rowResource struct {
	d   sqlguard.Dialect
	db  *sql.DB
	tbl *sqlguard.Table
	id  int64
}

func (r *rowResource) Write(ctx context.Context, token int64, value string) (guard.Decision, error) {
	return r.tbl.Update(ctx, r.db, r.id, token, sqlguard.Set("val", value))
}

func (r *rowResource) Read(ctx context.Context) (v string, mark int64, err error) {
	err = r.db.QueryRowContext(ctx, `SELECT val, fence_token FROM case_rows WHERE id = `+placeholder(r.d, 1), r.id).Scan(&v, &mark)
	return v, mark, err
}

func (r *rowResource) BadCalls() map[string]func(context.Context) error {
	call := func(id any, set ...sqlguard.Assignment) func(context.Context) error {
		return func(ctx context.Context) error { _, err := r.tbl.Update(ctx, r.db, id, 99, set...); return err }
	}
	return map[string]func(context.Context) error{
		"injected column":    call(r.id, sqlguard.Set("val = 'x', fence_token", 1)),
		"token column set":   call(r.id, sqlguard.Set("fence_token", 1)),
		"column set twice":   call(r.id, sqlguard.Set("val", "a"), sqlguard.Set("val", "b")),
		"nil id":             call(nil, sqlguard.Set("val", "a")),
		"missing row":        call(int64(-7), sqlguard.Set("val", "a")),
		"unknown column":     call(r.id, sqlguard.Set("no_such_column", "a")),
		"zero token, nil id": func(ctx context.Context) error { _, err := r.tbl.Update(ctx, r.db, nil, 0); return err },
	}
}

// marksResource is a value in case_values fenced by Marks, the mark and
// the value committed in one transaction, as the docs show.
type marksResource struct {
	d     sqlguard.Dialect
	db    *sql.DB
	marks *sqlguard.Marks
	id    string
}

func (r *marksResource) Write(ctx context.Context, token int64, value string) (guard.Decision, error) {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return guard.Decision{}, err
	}
	defer tx.Rollback()
	d, err := r.marks.On(tx).CheckContext(ctx, r.id, token)
	if err != nil || !d.Accepted {
		return d, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE case_values SET val = `+placeholder(r.d, 1)+` WHERE id = `+placeholder(r.d, 2), value, r.id); err != nil {
		return guard.Decision{}, err
	}
	return d, tx.Commit()
}

func (r *marksResource) Read(ctx context.Context) (v string, mark int64, err error) {
	if err = r.db.QueryRowContext(ctx, `SELECT val FROM case_values WHERE id = `+placeholder(r.d, 1), r.id).Scan(&v); err != nil {
		return "", 0, err
	}
	mark, err = r.marks.HighWater(ctx, r.id)
	return v, mark, err
}

func (r *marksResource) BadCalls() map[string]func(context.Context) error {
	check := func(id string) func(context.Context) error {
		return func(ctx context.Context) error { _, err := r.marks.CheckContext(ctx, id, 99); return err }
	}
	return map[string]func(context.Context) error{
		"empty id":          check(""),
		"control character": check(r.id + "\n"),
		"161-byte id":       check(r.id + string(make([]byte, 161))),
		"invalid UTF-8":     check(r.id + "\xff"),
	}
}
