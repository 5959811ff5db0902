package sqlguard_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	osexec "os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	_ "github.com/lib/pq"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/sqlguard"
)

// startPostgres runs a throwaway PostgreSQL cluster (initdb + pg_ctl) on a
// Unix socket, or skips the test when PostgreSQL is not installed.
func startPostgres(t *testing.T) *sql.DB {
	t.Helper()
	if testing.Short() {
		t.Skip("PostgreSQL test skipped in -short mode")
	}
	initdb, err := osexec.LookPath("initdb")
	if err != nil {
		t.Skip("initdb not found: PostgreSQL tests skipped")
	}
	pgctl, err := osexec.LookPath("pg_ctl")
	if err != nil {
		t.Skip("pg_ctl not found: PostgreSQL tests skipped")
	}
	// Under /tmp rather than t.TempDir, whose parents are private to the
	// test's user: PostgreSQL refuses to run as root, so as root the
	// cluster runs as the postgres user and must reach its directory.
	dir, err := os.MkdirTemp("", "sqlguard-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var prefix []string
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		runuser, lerr := osexec.LookPath("runuser")
		if err != nil || lerr != nil {
			t.Skip("running as root without a postgres user or runuser: PostgreSQL tests skipped")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		prefix = []string{runuser, "-u", "postgres", "--"}
	}
	run := func(args ...string) {
		t.Helper()
		args = append(prefix, args...)
		if out, err := osexec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	data := filepath.Join(dir, "data")
	run(initdb, "-D", data, "-U", "postgres", "-A", "trust", "--no-sync")
	// -w waits until the server accepts connections.
	run(pgctl, "-D", data, "-w", "-l", filepath.Join(dir, "log"),
		"-o", "-c listen_addresses='' -k "+dir+" -c fsync=off", "start")
	t.Cleanup(func() { run(pgctl, "-D", data, "-m", "immediate", "stop") })
	db, err := sql.Open("postgres", "host="+dir+" user=postgres dbname=postgres sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	return db
}

// The same guards, the same statements, on PostgreSQL with $n placeholders.
func TestPostgreSQL(t *testing.T) {
	db := startPostgres(t)
	ctx := context.Background()
	if _, err := db.Exec(`CREATE SCHEMA shop;
		CREATE TABLE shop.inventory (product_id BIGINT PRIMARY KEY, stock BIGINT NOT NULL,
			version BIGINT NOT NULL DEFAULT 1, fence_token BIGINT NOT NULL DEFAULT 0);
		INSERT INTO shop.inventory (product_id, stock) VALUES (42, 10)`); err != nil {
		t.Fatal(err)
	}
	tbl, err := sqlguard.NewTable(sqlguard.PostgreSQL, "shop.inventory", "product_id")
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
		_, err = tbl.UpdateVersion(ctx, db, 42, 50, 1, sqlguard.Set("stock", 4))
		var vc *sqlguard.VersionConflictError
		if !errors.As(err, &vc) || vc.Current != 2 {
			t.Fatalf("conflict = %v", err)
		}
		d, err = tbl.UpdateVersion(ctx, db, 42, 49, 2, sqlguard.Set("stock", 4))
		if err != nil || d.Accepted || d.Required != 50 {
			t.Fatalf("stale = %+v %v", d, err)
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
		m, err := sqlguard.NewMarks(db, sqlguard.PostgreSQL, "shop.fence_marks")
		if err != nil {
			t.Fatal(err)
		}
		if err := m.CreateTable(ctx); err != nil {
			t.Fatal(err)
		}
		g := guard.New()
		for _, s := range []struct {
			res string
			tok int64
		}{{"a", 5}, {"a", 5}, {"a", 4}, {"a/b ü", 1}, {"a", 9}, {"a", 8}} {
			want, _ := g.Check(s.res, s.tok)
			got, err := m.Check(s.res, s.tok)
			if want.Accepted {
				want.Required = 0
			}
			if err != nil || got != want {
				t.Fatalf("Check(%q, %d) = %+v, %v; guard says %+v", s.res, s.tok, got, err, want)
			}
		}
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
