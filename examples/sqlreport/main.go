// Command sqlreport guards writes in its own SQLite database with sqlguard
// and reports every decision to the fenceview server with client.Report.
//
// sqlguard decides in your database, where the data is: the server never
// sees those writes. Reporting them puts the refusals in the server's
// rejection history, on its event stream, in its metrics and on the
// dashboard, next to the refusals of its own guard.
//
//	go run ./examples/sqlreport            # starts a server in-process
//	go run ./examples/sqlreport -server http://127.0.0.1:8080
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/examples/internal/sqlitedb"
	"github.com/fenceview/fenceview/examples/internal/story"
	"github.com/fenceview/fenceview/guard/sqlguard"
	"github.com/fenceview/fenceview/internal/cmdmain"
)

func main() { cmdmain.Main("sqlreport", run) }

// source names this guard in the server's history.
const source = "sqlguard:inventory"

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("sqlreport", flag.ContinueOnError)
	server := story.ServerFlags(fs)
	resource := fs.String("resource", fmt.Sprintf("inventory:%d", time.Now().UnixNano()), "the lock's resource id (default: a new one per run)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, closeAll, err := server.Connect(ctx)
	if err != nil {
		return err
	}
	defer closeAll()
	var dbPath string // a temporary file
	db, closeDB, err := sqlitedb.Open(ctx, &dbPath, `
		CREATE TABLE inventory (product_id INTEGER PRIMARY KEY, stock INTEGER NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0);
		INSERT INTO inventory VALUES (42, 10, 0);`)
	if err != nil {
		return err
	}
	defer closeDB()
	inventory, err := sqlguard.NewTable(sqlguard.TableConfig{Dialect: sqlguard.SQLite, Table: "inventory", IDColumn: "product_id"})
	if err != nil {
		return err
	}

	// write is a guarded UPDATE whose decision, either way, goes to the
	// server. A report that fails to send does not undo the write: the
	// row's guard already decided.
	write := func(who string, token, stock int64) error {
		d, err := inventory.Update(ctx, db, 42, token, sqlguard.Set("stock", stock))
		if err != nil {
			return err
		}
		if _, err := c.Report(ctx, client.Report{Resource: *resource, Decision: d, Source: source}); err != nil {
			fmt.Fprintf(stdout, "%s: could not report (%v); the decision stands\n", who, err)
		}
		if d.Accepted {
			fmt.Fprintf(stdout, "%s wrote stock %d with token %d\n", who, stock, token)
		} else {
			fmt.Fprintf(stdout, "%s refused by the row: %s, token %d < required %d\n", who, d.Reason, d.Presented, d.Required)
		}
		return nil
	}

	// A holds the lock first, then B: A's token is older.
	a, b := c.Mutex(*resource, "worker-a"), c.Mutex(*resource, "worker-b")
	tokenA, err := a.Lock(ctx)
	if err != nil {
		return err
	}
	a.Unlock(ctx)
	tokenB, err := b.Lock(ctx)
	if err != nil {
		return err
	}
	defer b.Unlock(ctx)
	if err := write("B", tokenB, 7); err != nil {
		return err
	}
	// A was slow: it writes after B, with its old token.
	if err := write("A", tokenA, 9); err != nil {
		return err
	}

	page, err := c.Rejections(ctx, client.RejectionQuery{Resource: *resource})
	if err != nil {
		return err
	}
	for _, r := range page.Rejections {
		fmt.Fprintf(stdout, "server history: %s refused token %d (required %d) at %s, reported by %s\n",
			r.Resource, r.Presented, r.Required, r.At.Format(time.RFC3339), r.Source)
	}
	res, err := c.Resource(ctx, *resource)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "server: %s accepted %d, rejected %d, high-water mark %d\n", res.Resource, res.Accepted, res.Rejected, res.HighWaterMark)
	if len(page.Rejections) != 1 || res.Accepted != 1 || res.Rejected != 1 {
		return fmt.Errorf("the server's history does not match the row's decisions")
	}
	return nil
}
