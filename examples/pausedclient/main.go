// Command pausedclient plays the story fencing tokens exist for, against a
// fenceview server and an inventory row in SQLite:
//
//  1. Client A locks inventory:42 and gets a token.
//  2. A pauses (a GC pause, a stalled VM) past its lease.
//  3. The lease runs out; client B locks and writes with its larger token.
//  4. A wakes up, still believing it holds the lock, and writes.
//
// Step 4 is refused by the row itself: the UPDATE requires fence_token <=
// the presented token, and B's token is already recorded there.
//
//	go run ./examples/pausedclient            # starts a server in-process
//	go run ./examples/pausedclient -server http://127.0.0.1:8080
package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/fenceview/fenceview/examples/internal/sqlitedb"
	"github.com/fenceview/fenceview/examples/internal/story"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/sqlguard"
	"github.com/fenceview/fenceview/internal/cmdmain"
)

func main() { cmdmain.Main("pausedclient", run) }

// run plays the story and returns an error if it did not end with A's
// write refused and B's write in the row.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("pausedclient", flag.ContinueOnError)
	server, paused := story.ServerFlags(fs), story.PausedFlags(fs)
	dbPath := fs.String("db", "", "SQLite file holding the inventory (default: a temporary file)")
	if err := fs.Parse(args); err != nil {
		return err
	}

	c, closeAll, err := server.Connect(ctx)
	if err != nil {
		return err
	}
	defer closeAll()
	db, closeDB, err := sqlitedb.Open(ctx, dbPath, inventorySchema)
	if err != nil {
		return err
	}
	defer closeDB()
	inventory, err := sqlguard.NewTable(sqlguard.TableConfig{Dialect: sqlguard.SQLite, Table: "inventory", IDColumn: "product_id"})
	if err != nil {
		return err
	}

	// A locks and stalls past its lease; B locks with a newer token.
	race, err := story.Pause(ctx, c, paused, ", read stock 10, will write 9", stdout)
	if err != nil {
		return err
	}
	tokenB := race.TokenB
	d, err := inventory.Update(ctx, db, 42, tokenB, sqlguard.Set("stock", 7))
	if err := story.Accepted("B", d, err); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "B wrote stock 7 with token %d\n", tokenB)

	// A wakes up. Its Mutex knows the lease is gone, but a paused process
	// does not look before it writes: the row has to refuse it.
	_, stale, err := race.Late(ctx, stdout, func(token int64) (guard.Decision, error) {
		return inventory.Update(ctx, db, 42, token, sqlguard.Set("stock", 9))
	})
	if err != nil {
		return err
	}

	var stock, mark int64
	if err := db.QueryRowContext(ctx, `SELECT stock, fence_token FROM inventory WHERE product_id = 42`).Scan(&stock, &mark); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "inventory 42: stock %d, fence_token %d\n", stock, mark)
	if stock != 7 || mark != tokenB || stale.Required != tokenB {
		return fmt.Errorf("unexpected end state: stock %d, mark %d, required %d", stock, mark, stale.Required)
	}
	return nil
}

// inventorySchema is the guarded row: product 42, stock 10, no token yet.
const inventorySchema = `
	CREATE TABLE IF NOT EXISTS inventory (
		product_id  INTEGER PRIMARY KEY,
		stock       INTEGER NOT NULL,
		fence_token BIGINT  NOT NULL DEFAULT 0
	);
	INSERT OR REPLACE INTO inventory (product_id, stock, fence_token) VALUES (42, 10, 0);`
