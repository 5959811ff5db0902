package sqlguard_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/sqlguard"
	"github.com/fenceview/fenceview/internal/guardtest"
)

// openSQLite opens a real SQLite file in the test's temp dir.
func openSQLite(t *testing.T) (*sql.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fence.db")
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000&_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

func exec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func inventory(t *testing.T) (*sql.DB, *sqlguard.Table) {
	t.Helper()
	db, _ := openSQLite(t)
	exec(t, db, `CREATE TABLE inventory (product_id INTEGER PRIMARY KEY, stock INTEGER NOT NULL,
		fence_token BIGINT NOT NULL DEFAULT 0)`)
	exec(t, db, `INSERT INTO inventory (product_id, stock) VALUES (42, 10)`)
	tbl, err := sqlguard.NewTable(sqlguard.TableConfig{Dialect: sqlguard.SQLite, Table: "inventory", IDColumn: "product_id"})
	if err != nil {
		t.Fatal(err)
	}
	return db, tbl
}

func row(t *testing.T, db *sql.DB) (stock, token int64) {
	t.Helper()
	if err := db.QueryRow(`SELECT stock, fence_token FROM inventory WHERE product_id = 42`).Scan(&stock, &token); err != nil {
		t.Fatal(err)
	}
	return stock, token
}

// The seed's story: B (token 42) writes, then paused A (token 41) wakes
// up and writes. A is refused with the token that beat it; B's write stays.
func TestStaleWriterRefused(t *testing.T) {
	ctx := context.Background()
	db, tbl := inventory(t)
	if d, err := tbl.Update(ctx, db, 42, 42, sqlguard.Set("stock", 7)); err != nil || !d.Accepted {
		t.Fatalf("B's write = %+v, %v", d, err)
	}
	d, err := tbl.Update(ctx, db, 42, 41, sqlguard.Set("stock", 9))
	guardtest.RefusedStale(t, d, err, "inventory:42", 41, 42)
	if stock, tok := row(t, db); stock != 7 || tok != 42 {
		t.Fatalf("row = stock %d token %d, want 7 42", stock, tok)
	}
}

func TestSameTokenWritesTwice(t *testing.T) {
	ctx := context.Background()
	db, tbl := inventory(t)
	for _, delta := range []int{-1, -2} {
		if d, err := tbl.Update(ctx, db, 42, 50, sqlguard.Add("stock", delta)); err != nil || !d.Accepted {
			t.Fatalf("write with the same token = %+v, %v", d, err)
		}
	}
	if stock, tok := row(t, db); stock != 7 || tok != 50 {
		t.Fatalf("row = stock %d token %d, want 7 50", stock, tok)
	}
}

// recDB records statements and can run a hook before the first UPDATE.
type recDB struct {
	sqlguard.DB
	mu         sync.Mutex
	stmts      []string
	beforeExec func()
}

func (r *recDB) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	r.mu.Lock()
	r.stmts = append(r.stmts, strings.Fields(q)[0])
	hook := r.beforeExec
	r.beforeExec = nil
	r.mu.Unlock()
	if hook != nil {
		hook()
	}
	return r.DB.ExecContext(ctx, q, args...)
}

func (r *recDB) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	r.mu.Lock()
	r.stmts = append(r.stmts, strings.Fields(q)[0])
	r.mu.Unlock()
	return r.DB.QueryRowContext(ctx, q, args...)
}

// The mark in a refusal is the one that won, read after the refusal: here a
// newer writer commits 50 just before our update runs; a guard that read
// the mark first would report 42, or worse, pass the check.
func TestRequiredReadAfterRefusal(t *testing.T) {
	ctx := context.Background()
	db, tbl := inventory(t)
	exec(t, db, `UPDATE inventory SET fence_token = 42`)
	rec := &recDB{DB: db, beforeExec: func() { exec(t, db, `UPDATE inventory SET stock = 1, fence_token = 50`) }}
	d, err := tbl.Update(ctx, rec, 42, 45, sqlguard.Set("stock", 99))
	if err != nil {
		t.Fatal(err)
	}
	if d.Accepted || d.Required != 50 || d.Presented != 45 {
		t.Fatalf("decision = %+v, want refused with required 50", d)
	}
	if got := strings.Join(rec.stmts, ","); got != "UPDATE,SELECT" {
		t.Fatalf("statements = %s, want the update first and the read only after it", got)
	}
	if stock, _ := row(t, db); stock != 1 {
		t.Fatalf("stale write landed: stock %d", stock)
	}
}

func TestAcceptedWriteIsOneStatement(t *testing.T) {
	db, tbl := inventory(t)
	rec := &recDB{DB: db}
	if d, err := tbl.Update(context.Background(), rec, 42, 3, sqlguard.Set("stock", 1)); err != nil || !d.Accepted {
		t.Fatalf("%+v, %v", d, err)
	}
	if got := strings.Join(rec.stmts, ","); got != "UPDATE" {
		t.Fatalf("statements = %s, want one UPDATE", got)
	}
}

func TestMissingRow(t *testing.T) {
	db, tbl := inventory(t)
	_, err := tbl.Update(context.Background(), db, 7, 3, sqlguard.Set("stock", 1))
	if !errors.Is(err, sqlguard.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
}

// Inside a transaction the mark moves with the write: a rollback undoes both.
func TestTransactionRollbackUndoesMark(t *testing.T) {
	ctx := context.Background()
	db, tbl := inventory(t)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := tbl.Update(ctx, tx, 42, 60, sqlguard.Set("stock", 0)); err != nil || !d.Accepted {
		t.Fatalf("%+v, %v", d, err)
	}
	// Within the transaction a lower token is already refused.
	if d, err := tbl.Update(ctx, tx, 42, 59, sqlguard.Set("stock", 5)); err != nil || d.Accepted || d.Required != 60 {
		t.Fatalf("inside tx: %+v, %v", d, err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if stock, tok := row(t, db); stock != 10 || tok != 0 {
		t.Fatalf("after rollback row = %d %d, want 10 0", stock, tok)
	}
	if d, err := tbl.Update(ctx, db, 42, 59, sqlguard.Set("stock", 5)); err != nil || !d.Accepted {
		t.Fatalf("after rollback token 59 = %+v, %v", d, err)
	}
}

func documents(t *testing.T) (*sql.DB, *sqlguard.Table) {
	t.Helper()
	db, _ := openSQLite(t)
	exec(t, db, `CREATE TABLE documents (document_id TEXT PRIMARY KEY, content TEXT NOT NULL,
		version BIGINT NOT NULL DEFAULT 1, fencing_token BIGINT NOT NULL DEFAULT 0)`)
	exec(t, db, `INSERT INTO documents (document_id, content) VALUES ('doc-1', 'a')`)
	tbl, err := sqlguard.NewTable(sqlguard.TableConfig{Dialect: sqlguard.SQLite, Table: "documents", IDColumn: "document_id", TokenColumn: "fencing_token"})
	if err != nil {
		t.Fatal(err)
	}
	return db, tbl
}

func doc(t *testing.T, db *sql.DB) (content string, version, token int64) {
	t.Helper()
	if err := db.QueryRow(`SELECT content, version, fencing_token FROM documents`).Scan(&content, &version, &token); err != nil {
		t.Fatal(err)
	}
	return
}

func TestVersionGuard(t *testing.T) {
	ctx := context.Background()
	db, tbl := documents(t)

	d, err := tbl.UpdateVersion(ctx, db, "doc-1", 10, 1, sqlguard.Set("content", "b"))
	if err != nil || !d.Accepted {
		t.Fatalf("first write = %+v, %v", d, err)
	}
	if c, v, tok := doc(t, db); c != "b" || v != 2 || tok != 10 {
		t.Fatalf("doc = %q v%d t%d, want b v2 t10", c, v, tok)
	}

	// Same holder, same token, but a lost update: re-read and retry.
	_, err = tbl.UpdateVersion(ctx, db, "doc-1", 10, 1, sqlguard.Set("content", "c"))
	var vc *sqlguard.VersionConflictError
	if !errors.As(err, &vc) || !errors.Is(err, sqlguard.ErrVersionConflict) || vc.Expected != 1 || vc.Current != 2 {
		t.Fatalf("version conflict err = %v", err)
	}

	// A stale token with a wrong version: the stale token wins, stop.
	d, err = tbl.UpdateVersion(ctx, db, "doc-1", 9, 1, sqlguard.Set("content", "c"))
	if err != nil || d.Accepted || d.Reason != guard.ReasonStale || d.Required != 10 {
		t.Fatalf("stale + wrong version = %+v, %v", d, err)
	}
	// A stale token with the right version is still refused.
	d, err = tbl.UpdateVersion(ctx, db, "doc-1", 9, 2, sqlguard.Set("content", "c"))
	if err != nil || d.Accepted || d.Required != 10 {
		t.Fatalf("stale + right version = %+v, %v", d, err)
	}
	if c, v, tok := doc(t, db); c != "b" || v != 2 || tok != 10 {
		t.Fatalf("refusals changed the doc: %q v%d t%d", c, v, tok)
	}
}

// Names are validated and quoted; values are bound. Nothing a caller passes
// as a name can become SQL.
func TestIdentifiersCannotInject(t *testing.T) {
	ctx := context.Background()
	db, tbl := inventory(t)
	for _, name := range []string{"inventory; DROP TABLE inventory", `inventory"`, "", "a.b.c", "1abc", "stock -- ", "ünïcode"} {
		if _, err := sqlguard.NewTable(sqlguard.TableConfig{Dialect: sqlguard.SQLite, Table: name, IDColumn: "product_id"}); !errors.Is(err, sqlguard.ErrInvalidIdentifier) {
			t.Errorf("NewTable(%q) err = %v, want ErrInvalidIdentifier", name, err)
		}
		if _, err := sqlguard.NewTable(sqlguard.TableConfig{Dialect: sqlguard.SQLite, Table: "inventory", IDColumn: name}); !errors.Is(err, sqlguard.ErrInvalidIdentifier) {
			t.Errorf("id column %q err = %v", name, err)
		}
		if _, err := tbl.Update(ctx, db, 42, 5, sqlguard.Set(name, 0)); !errors.Is(err, sqlguard.ErrInvalidIdentifier) {
			t.Errorf("Set(%q) err = %v", name, err)
		}
	}
	// A value that looks like SQL is only a value.
	exec(t, db, `ALTER TABLE inventory ADD COLUMN note TEXT`)
	evil := "x'; DROP TABLE inventory; --"
	if d, err := tbl.Update(ctx, db, 42, 5, sqlguard.Set("note", evil)); err != nil || !d.Accepted {
		t.Fatalf("%+v, %v", d, err)
	}
	var note string
	if err := db.QueryRow(`SELECT note FROM inventory`).Scan(&note); err != nil || note != evil {
		t.Fatalf("note = %q, %v", note, err)
	}
}

func TestBadCallsChangeNothing(t *testing.T) {
	ctx := context.Background()
	db, tbl := inventory(t)
	cases := []struct {
		name  string
		id    any
		token int64
		set   []sqlguard.Assignment
		want  error
	}{
		{"zero token", 42, 0, []sqlguard.Assignment{sqlguard.Set("stock", 0)}, guard.ErrInvalidToken},
		{"negative token", 42, -1, []sqlguard.Assignment{sqlguard.Set("stock", 0)}, guard.ErrInvalidToken},
		{"nil id", nil, 5, []sqlguard.Assignment{sqlguard.Set("stock", 0)}, sqlguard.ErrInvalid},
		{"token column", 42, 5, []sqlguard.Assignment{sqlguard.Set("fence_token", 1)}, sqlguard.ErrInvalid},
		{"id column", 42, 5, []sqlguard.Assignment{sqlguard.Set("product_id", 1)}, sqlguard.ErrInvalid},
		{"twice", 42, 5, []sqlguard.Assignment{sqlguard.Set("stock", 0), sqlguard.Add("stock", 1)}, sqlguard.ErrInvalid},
	}
	for _, c := range cases {
		if _, err := tbl.Update(ctx, db, c.id, c.token, c.set...); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
	if stock, tok := row(t, db); stock != 10 || tok != 0 {
		t.Fatalf("row = %d %d, want untouched 10 0", stock, tok)
	}
}

// Reserved words and schema-qualified names work because they are quoted.
func TestQuotedNames(t *testing.T) {
	db, _ := openSQLite(t)
	exec(t, db, `CREATE TABLE "order" ("select" TEXT PRIMARY KEY, "from" INT, fence_token BIGINT NOT NULL DEFAULT 0)`)
	exec(t, db, `INSERT INTO "order" VALUES ('o1', 0, 0)`)
	tbl, err := sqlguard.NewTable(sqlguard.TableConfig{Dialect: sqlguard.SQLite, Table: "main.order", IDColumn: "select"})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := tbl.Update(context.Background(), db, "o1", 3, sqlguard.Set("from", 9)); err != nil || !d.Accepted {
		t.Fatalf("%+v, %v", d, err)
	}
}

// Many writers with different tokens race on one row of a real file: the
// row ends with the highest token and that writer's value, and every
// writer below a token already recorded was refused.
func TestConcurrentWritersOnFile(t *testing.T) {
	ctx := context.Background()
	db, tbl := inventory(t)
	const n = 24
	var wg sync.WaitGroup
	decisions := make([]guard.Decision, n+1)
	errs := make(chan error, n)
	for tok := int64(1); tok <= n; tok++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := tbl.Update(ctx, db, 42, tok, sqlguard.Set("stock", tok))
			if err != nil {
				errs <- fmt.Errorf("token %d: %w", tok, err)
				return
			}
			decisions[tok] = d
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if stock, tok := row(t, db); stock != n || tok != n {
		t.Fatalf("row = stock %d token %d, want %d %d", stock, tok, n, n)
	}
	if !decisions[n].Accepted {
		t.Fatalf("highest token refused: %+v", decisions[n])
	}
	for tok, d := range decisions[1:] {
		if !d.Accepted && (d.Required <= d.Presented || d.Presented != int64(tok+1)) {
			t.Fatalf("refusal %+v does not name a higher winner", d)
		}
	}
}
