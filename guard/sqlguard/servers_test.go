package sqlguard_test

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/lib/pq"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/internal/marktest"
	"github.com/fenceview/fenceview/guard/sqlguard"
	"github.com/fenceview/fenceview/internal/dbtest"
	"github.com/fenceview/fenceview/internal/guardtest"
)

// openPostgres starts a real PostgreSQL server for the test.
func openPostgres(t testing.TB) *sql.DB {
	t.Helper()
	srv := dbtest.PostgreSQL(t)
	db, err := sql.Open("postgres", srv.PostgresDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", srv.Version)
	return db
}

// openMariaDB starts a real MariaDB server for the test and returns a pool
// on a new database with the given DSN parameters.
func openMariaDB(t testing.TB, params string) (*sql.DB, *dbtest.Server) {
	t.Helper()
	srv := dbtest.MariaDB(t, "fv")
	db := openMySQLPool(t, srv, params)
	t.Logf("%s", srv.Version)
	return db, srv
}

func openMySQLPool(t testing.TB, srv *dbtest.Server, params string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", srv.MySQLDSN("fv", params))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	return db
}

// The same guards and statements on PostgreSQL ($n placeholders).
func TestPostgreSQL(t *testing.T) {
	db := openPostgres(t)
	serverSuite(t, sqlguard.PostgreSQL, db)
	runCases(t, sqlguard.PostgreSQL, db)
}

// The same guards on MariaDB (? placeholders, backquoted names), through
// go-sql-driver/mysql with clientFoundRows=true.
func TestMariaDB(t *testing.T) {
	db, srv := openMariaDB(t, "clientFoundRows=true")
	serverSuite(t, sqlguard.MySQL, db)
	runCases(t, sqlguard.MySQL, db)
	mysqlFoundRows(t, srv, db)
	mysqlIdentity(t, db)
}

// serverSuite is the sqlguard behaviour beyond the shared cases, on a real
// server: the mark that won is read after a refusal, the version guard,
// missing rows, transactions, Marks agreeing with the in-memory guard, and
// concurrent writers on one row.
func serverSuite(t *testing.T, d sqlguard.Dialect, db *sql.DB) {
	ctx := context.Background()
	for _, q := range []string{
		`CREATE SCHEMA shop`,
		`CREATE TABLE shop.inventory (product_id BIGINT PRIMARY KEY, stock BIGINT NOT NULL,
			version BIGINT NOT NULL DEFAULT 1, fence_token BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO shop.inventory (product_id, stock) VALUES (42, 10)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	tbl, err := sqlguard.NewTable(sqlguard.TableConfig{Dialect: d, Table: "shop.inventory", IDColumn: "product_id"})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("stale writer refused, required read after", func(t *testing.T) {
		if d, err := tbl.Update(ctx, db, 42, 42, sqlguard.Set("stock", 7)); err != nil || !d.Accepted {
			t.Fatalf("%+v %v", d, err)
		}
		if d, err := tbl.Update(ctx, db, 42, 42, sqlguard.Add("stock", -1)); err != nil || !d.Accepted {
			t.Fatalf("same token again: %+v %v", d, err)
		}
		rec := &recDB{DB: db, beforeExec: func() {
			if _, err := db.Exec(`UPDATE shop.inventory SET fence_token = 50`); err != nil {
				t.Error(err)
			}
		}}
		d, err := tbl.Update(ctx, rec, 42, 45, sqlguard.Set("stock", 99))
		if err != nil || d.Accepted || d.Required != 50 || d.Reason != guard.ReasonStale {
			t.Fatalf("%+v %v", d, err)
		}
		var stock int64
		db.QueryRow(`SELECT stock FROM shop.inventory WHERE product_id = 42`).Scan(&stock)
		if stock != 6 {
			t.Fatalf("stock %d, want 6", stock)
		}
	})

	t.Run("version guard", func(t *testing.T) {
		d, err := tbl.UpdateVersion(ctx, db, 42, 50, 1, sqlguard.Set("stock", 5))
		if err != nil || !d.Accepted {
			t.Fatalf("%+v %v", d, err)
		}
		// The same token, the same values: accepted, since the version
		// moves (and, on MySQL, found rows count the matched row).
		d, err = tbl.UpdateVersion(ctx, db, 42, 50, 2, sqlguard.Set("stock", 5))
		if err != nil || !d.Accepted {
			t.Fatalf("same token and values at version 2: %+v %v", d, err)
		}
		_, err = tbl.UpdateVersion(ctx, db, 42, 50, 2, sqlguard.Set("stock", 4))
		var vc *sqlguard.VersionConflictError
		if !errors.As(err, &vc) || vc.Current != 3 || !errors.Is(err, sqlguard.ErrVersionConflict) {
			t.Fatalf("conflict = %v", err)
		}
		d, err = tbl.UpdateVersion(ctx, db, 42, 49, 3, sqlguard.Set("stock", 4))
		if err != nil || d.Accepted || d.Required != 50 {
			t.Fatalf("stale = %+v %v", d, err)
		}
		// Both guards fail: the stale token wins (stop, do not retry).
		d, err = tbl.UpdateVersion(ctx, db, 42, 49, 1, sqlguard.Set("stock", 4))
		if err != nil || d.Accepted || d.Required != 50 {
			t.Fatalf("stale and wrong version = %+v %v", d, err)
		}
		var stock, version int64
		db.QueryRow(`SELECT stock, version FROM shop.inventory WHERE product_id = 42`).Scan(&stock, &version)
		if stock != 5 || version != 3 {
			t.Fatalf("row = stock %d version %d, want 5 3", stock, version)
		}
	})

	t.Run("missing row", func(t *testing.T) {
		if _, err := tbl.Update(ctx, db, 7, 1, sqlguard.Set("stock", 1)); !errors.Is(err, sqlguard.ErrNotFound) {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("transaction", func(t *testing.T) {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d, err := tbl.Update(ctx, tx, 42, 90, sqlguard.Set("stock", 0)); err != nil || !d.Accepted {
			t.Fatalf("%+v %v", d, err)
		}
		tx.Rollback()
		if d, err := tbl.Update(ctx, db, 42, 60, sqlguard.Set("stock", 3)); err != nil || !d.Accepted {
			t.Fatalf("after rollback: %+v %v", d, err)
		}
	})

	t.Run("marks", func(t *testing.T) {
		m := marktest.New(t, db, d, "shop.fence_marks")
		guardtest.Agree(t, guardtest.Steps(), false, m.Check)
	})

	t.Run("concurrent writers", func(t *testing.T) {
		var wg sync.WaitGroup
		for tok := int64(100); tok < 132; tok++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := tbl.Update(ctx, db, 42, tok, sqlguard.Set("stock", tok)); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		var stock, mark int64
		db.QueryRow(`SELECT stock, fence_token FROM shop.inventory WHERE product_id = 42`).Scan(&stock, &mark)
		if stock != 131 || mark != 131 {
			t.Fatalf("stock %d mark %d, want 131 131", stock, mark)
		}
	})
}

// Without clientFoundRows a MySQL connection reports changed rows only: a
// repeated identical write would look refused. The guards must say so with
// ErrFoundRowsRequired, never answer a wrong decision; CheckFoundRows finds
// it up front.
func mysqlFoundRows(t *testing.T, srv *dbtest.Server, good *sql.DB) {
	ctx := context.Background()
	bad := openMySQLPool(t, srv, "")
	t.Run("found rows: CheckFoundRows", func(t *testing.T) {
		if err := sqlguard.CheckFoundRows(ctx, good); err != nil {
			t.Fatalf("with clientFoundRows=true: %v", err)
		}
		if err := sqlguard.CheckFoundRows(ctx, bad); !errors.Is(err, sqlguard.ErrFoundRowsRequired) {
			t.Fatalf("without clientFoundRows: %v, want ErrFoundRowsRequired", err)
		}
	})
	t.Run("found rows: Table", func(t *testing.T) {
		if _, err := good.Exec(`CREATE TABLE found_rows (id BIGINT PRIMARY KEY, val BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0)`); err != nil {
			t.Fatal(err)
		}
		if _, err := good.Exec(`INSERT INTO found_rows (id, val) VALUES (1, 0)`); err != nil {
			t.Fatal(err)
		}
		tbl, err := sqlguard.NewTable(sqlguard.TableConfig{Dialect: sqlguard.MySQL, Table: "found_rows", IDColumn: "id"})
		if err != nil {
			t.Fatal(err)
		}
		if d, err := tbl.Update(ctx, bad, 1, 5, sqlguard.Set("val", 7)); err != nil || !d.Accepted {
			t.Fatalf("first write (it changes the row) = %+v, %v", d, err)
		}
		d, err := tbl.Update(ctx, bad, 1, 5, sqlguard.Set("val", 7))
		if !errors.Is(err, sqlguard.ErrFoundRowsRequired) {
			t.Fatalf("repeated write without found rows = %+v, %v; want ErrFoundRowsRequired", d, err)
		}
		// A real refusal stays a refusal on the same connection.
		if d, err := tbl.Update(ctx, bad, 1, 4, sqlguard.Set("val", 1)); err != nil || d.Accepted || d.Required != 5 {
			t.Fatalf("stale write without found rows = %+v, %v", d, err)
		}
		if d, err := tbl.Update(ctx, good, 1, 5, sqlguard.Set("val", 7)); err != nil || !d.Accepted {
			t.Fatalf("repeated write with found rows = %+v, %v", d, err)
		}
	})
	t.Run("found rows: Marks", func(t *testing.T) {
		m := marktest.New(t, bad, sqlguard.MySQL, "found_rows_marks")
		if d, err := m.Check("r", 5); err != nil || !d.Accepted {
			t.Fatalf("first mark = %+v, %v", d, err)
		}
		if d, err := m.Check("r", 5); !errors.Is(err, sqlguard.ErrFoundRowsRequired) {
			t.Fatalf("equal token without found rows = %+v, %v; want ErrFoundRowsRequired", d, err)
		}
		if d, err := m.On(good).Check("r", 5); err != nil || !d.Accepted {
			t.Fatalf("equal token with found rows = %+v, %v", d, err)
		}
	})
}

// Resource ids are compared byte by byte, as everywhere in fenceview: MySQL's
// usual collations would fold case and trailing spaces into one mark.
func mysqlIdentity(t *testing.T, db *sql.DB) {
	t.Run("marks keep ids apart byte by byte", func(t *testing.T) {
		m := marktest.New(t, db, sqlguard.MySQL, "identity_marks")
		if d, err := m.Check("inventory", 50); err != nil || !d.Accepted {
			t.Fatalf("%+v %v", d, err)
		}
		for _, id := range []string{"Inventory", "inventory ", "inventorý"} {
			if d, err := m.Check(id, 1); err != nil || !d.Accepted {
				t.Errorf("Check(%q, 1) = %+v, %v: shares the mark of %q", id, d, err, "inventory")
			}
		}
	})
}
