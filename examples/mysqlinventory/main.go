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
	"fmt"
	"io"

	_ "github.com/go-sql-driver/mysql"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/examples/internal/story"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/sqlguard"
	"github.com/fenceview/fenceview/internal/cmdmain"
)

func main() { cmdmain.Main("mysqlinventory", run) }

// run plays the story and returns an error unless A's write was refused,
// B's write is in the row and the refusal was reported.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	cmd := story.NewCommand("mysqlinventory")
	paused := cmd.PausedFlags()
	dsn := cmd.Required("dsn", "the MySQL or MariaDB database to write to, a go-sql-driver/mysql DSN with clientFoundRows=true")
	c, closeAll, err := cmd.Connect(ctx, args)
	if err != nil {
		return err
	}
	defer closeAll()
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
	inventory, err := sqlguard.NewTable(sqlguard.TableConfig{Dialect: sqlguard.MySQL, Table: "inventory", IDColumn: "product_id"})
	if err != nil {
		return err
	}

	// A locks and stalls past its lease; B locks with a newer token.
	race, err := story.Pause(ctx, c, paused, ", will write stock 9", stdout)
	if err != nil {
		return err
	}
	tokenB := race.TokenB
	for i := 0; i < 2; i++ {
		d, err := inventory.Update(ctx, db, 42, tokenB, sqlguard.Set("stock", 7))
		if err := story.Accepted("B", d, err); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "B wrote stock 7 twice with token %d: both accepted\n", tokenB)

	// A wakes up and writes: the row has to refuse it.
	d, refused, err := race.Late(ctx, stdout, func(token int64) (guard.Decision, error) {
		return inventory.Update(ctx, db, 42, token, sqlguard.Set("stock", 9))
	})
	if err != nil {
		return err
	}
	n, err := c.Report(ctx, client.Report{Resource: paused.Resource, Decision: d, Source: "inventory-mysql"})
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
