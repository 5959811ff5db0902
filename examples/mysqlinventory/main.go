// Command mysqlinventory plays the story fencing tokens exist for, against
// a fenceview server and an inventory row in MySQL or MariaDB:
//
//  1. Client A locks inventory:42 and gets a token.
//  2. A pauses (a GC pause, a stalled VM) past its lease.
//  3. The lease runs out; client B locks and writes the row, twice under
//     the same token (the second write changes nothing, and must still be
//     accepted).
//  4. A wakes up, still believing it holds the lock, and writes.
//
// Step 4 is refused by the row itself: the UPDATE requires fence_token <=
// the presented token. The refusal is reported to the fenceview server.
//
// The DSN must carry clientFoundRows=true: without it MySQL counts only
// changed rows, and B's repeated write would be indistinguishable from a
// refusal. sqlguard.CheckFoundRows says so before anything is written.
//
//	go run ./examples/mysqlinventory -dsn 'app:secret@tcp(127.0.0.1:3306)/shop?clientFoundRows=true'
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/client/fenceviewtest"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/sqlguard"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mysqlinventory:", err)
		os.Exit(1)
	}
}

// run plays the story and returns an error unless A's write was refused,
// B's write is in the row and the refusal was reported.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("mysqlinventory", flag.ContinueOnError)
	apiKey := fs.String("key", os.Getenv("FENCEVIEW_KEY"), "fenceview API key, when the server has auth on (env FENCEVIEW_KEY)")
	server := fs.String("server", "", "fenceview server URL (default: start one in-process)")
	dsn := fs.String("dsn", "", "go-sql-driver/mysql DSN with clientFoundRows=true (required)")
	lease := fs.Duration("lease", 500*time.Millisecond, "client A's lease; A pauses longer than this")
	resource := fs.String("resource", "inventory:42", "the lock's resource id")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dsn == "" {
		return errors.New("-dsn is required (a MySQL or MariaDB database to write to)")
	}
	db, err := sql.Open("mysql", *dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	// Fail now, not at B's repeated write, if the DSN lacks found rows.
	if err := sqlguard.CheckFoundRows(ctx, db); err != nil {
		return err
	}
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS inventory (
			product_id  BIGINT PRIMARY KEY,
			stock       BIGINT NOT NULL,
			fence_token BIGINT NOT NULL DEFAULT 0)`,
		`REPLACE INTO inventory (product_id, stock, fence_token) VALUES (42, 10, 0)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	inventory, err := sqlguard.NewTable(sqlguard.MySQL, "inventory", "product_id")
	if err != nil {
		return err
	}

	if *server == "" {
		srv, err := fenceviewtest.Start(ctx, fenceviewtest.Options{})
		if err != nil {
			return err
		}
		defer srv.Close()
		*server = srv.URL
	}
	c, err := client.New(*server, client.WithKey(*apiKey))
	if err != nil {
		return err
	}
	defer c.Close()
	a := c.Mutex(*resource, "client-a")
	b := c.Mutex(*resource, "client-b")

	tokenA, err := a.TryLock(ctx, 0, *lease)
	if err != nil {
		return fmt.Errorf("A: %w", err)
	}
	fmt.Fprintf(stdout, "A locked %s with token %d (lease %v), will write stock 9\n", *resource, tokenA, *lease)
	fmt.Fprintln(stdout, "A pauses...")

	tokenB, err := b.Lock(ctx)
	if err != nil {
		return fmt.Errorf("B: %w", err)
	}
	fmt.Fprintf(stdout, "A's lease ran out; B locked %s with token %d\n", *resource, tokenB)
	for i := 0; i < 2; i++ {
		d, err := inventory.Update(ctx, db, 42, tokenB, sqlguard.Set("stock", 7))
		if err != nil {
			return fmt.Errorf("B's write: %w", err)
		}
		if !d.Accepted {
			return fmt.Errorf("B's write was refused: %+v", d)
		}
	}
	fmt.Fprintf(stdout, "B wrote stock 7 twice with token %d: both accepted\n", tokenB)
	if err := b.Unlock(ctx); err != nil {
		return fmt.Errorf("B: %w", err)
	}

	<-a.Done()
	d, err := inventory.Update(ctx, db, 42, tokenA, sqlguard.Set("stock", 9))
	if err != nil {
		return fmt.Errorf("A's write: %w", err)
	}
	var refused *guard.RefusalError
	if !errors.As(d.Err(*resource), &refused) {
		return fmt.Errorf("A's stale write was accepted: %+v", d)
	}
	fmt.Fprintf(stdout, "A's write refused: %s, token %d < required %d\n", refused.Reason, refused.Presented, refused.Required)
	n, err := c.Report(ctx, client.Report{Resource: *resource, Decision: d, Source: "inventory-mysql"})
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	fmt.Fprintf(stdout, "refusals reported to fenceview: %d\n", n)

	var stock, mark int64
	if err := db.QueryRowContext(ctx, `SELECT stock, fence_token FROM inventory WHERE product_id = 42`).Scan(&stock, &mark); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "inventory 42: stock %d, fence_token %d\n", stock, mark)
	if stock != 7 || mark != tokenB || refused.Required != tokenB || n != 1 {
		return fmt.Errorf("unexpected end state: stock %d, mark %d, required %d, reported %d", stock, mark, refused.Required, n)
	}
	return nil
}
