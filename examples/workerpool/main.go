// Command workerpool runs a pool of workers over the partitions of a job
// table, one worker per partition at a time, with a fenced semaphore:
//
//  1. The semaphore "partitions" has one permit per partition. Each worker
//     acquires a permit; its slot is the partition it owns, and the
//     slot's token fences every write it makes to that partition's row.
//  2. A spare worker finds no permit free and waits on the server.
//  3. Worker 2 stalls (its process is frozen, its renewals stop) past its
//     lease. The server gives slot 2 to the spare worker, with a larger
//     token, and the spare's writes to partition 2 land.
//  4. Worker 2 wakes up, still believing it owns partition 2, and writes:
//     the row refuses the old token.
//
// Run it:
//
//	go run ./examples/workerpool            # starts a server in-process
//	go run ./examples/workerpool -server http://127.0.0.1:8080
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/examples/internal/sqlitedb"
	"github.com/fenceview/fenceview/examples/internal/story"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/sqlguard"
	"github.com/fenceview/fenceview/internal/cmdmain"
)

func main() { cmdmain.Main("workerpool", run) }

// worker is one process of the pool: its own client (its own holder id
// and watchdog) and the permit it holds.
type worker struct {
	name   string
	c      *client.Client
	permit *client.Permit
}

// run plays the story and returns an error unless it ended with every
// partition written by its current owner and the stalled worker refused.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	cmd := story.NewCommand("workerpool")
	dbPath := cmd.String("db", "", "SQLite file holding the partitions (default: a temporary file)")
	workers := cmd.Int("workers", 4, "workers, and partitions (3..1024)")
	stallLease := cmd.Duration("stall-lease", 500*time.Millisecond, "the lease of the worker that stalls; it stalls longer than this")
	name := cmd.String("semaphore", "partitions", "the semaphore's name")
	if err := cmd.Parse(args); err != nil {
		return err
	}
	if *workers < 3 || *workers > 1024 {
		return cmdmain.Usage(fmt.Errorf("-workers %d: want 3..1024", *workers))
	}
	server := &cmd.Server
	const stalled = 2 // the worker that stalls, and its partition

	stop, err := server.Start(ctx)
	if err != nil {
		return err
	}
	defer stop()
	db, closeDB, err := openPartitions(ctx, dbPath, *workers)
	if err != nil {
		return err
	}
	defer closeDB()
	partitions := sqlitedb.Table("partitions", "partition_id")
	// write is a worker's write to its partition, fenced by its slot's
	// token: refused when the slot has been granted since with a larger one.
	write := func(w *worker, token int64, note string) (guard.Decision, error) {
		return partitions.Update(ctx, db, w.permit.Slot(), token, sqlguard.Set("done_by", w.name), sqlguard.Set("note", note))
	}

	newWorker := func(name string, lease time.Duration) (*worker, error) {
		c, err := client.New(client.Config{URL: server.URL, Key: server.Key, Holder: name, Lease: lease})
		return &worker{name: name, c: c}, err
	}
	pool := make([]*worker, *workers)
	for i := range pool {
		var lease time.Duration // 0: client.DefaultLease
		if i == stalled {
			lease = *stallLease
		}
		w, err := newWorker(fmt.Sprintf("worker-%d", i), lease)
		if err != nil {
			return err
		}
		defer w.c.Close()
		// One at a time, so that worker i gets slot i: the story reads
		// better, and the fencing does not depend on it.
		if w.permit, err = w.c.Semaphore(*name, *workers).Acquire(ctx); err != nil {
			return fmt.Errorf("%s: %w", w.name, err)
		}
		t := w.permit.Token()
		fmt.Fprintf(stdout, "%s holds slot %d (%s) with token %d\n", w.name, w.permit.Slot(), t.Resource, t.Number)
		d, err := write(w, t.Number, "first pass")
		if err := story.Accepted(w.name, d, err); err != nil {
			return err
		}
		pool[i] = w
	}

	spare, err := newWorker("spare", 0)
	if err != nil {
		return err
	}
	defer spare.c.Close()
	if _, err := spare.c.Semaphore(*name, *workers).TryAcquire(ctx, 0); !errors.Is(err, client.ErrNoPermit) {
		return fmt.Errorf("spare: want no permit free, got %v", err)
	}
	fmt.Fprintf(stdout, "spare finds no permit free (%d permits), waits\n", *workers)

	// Worker 2 stalls: its process stops, and so do its renewals. Closing
	// its client is what a frozen process looks like to the server; the
	// token it remembers is what it will write with when it wakes.
	w2 := pool[stalled]
	tokenW2 := w2.permit.Token().Number
	w2.c.Close()
	fmt.Fprintf(stdout, "%s stalls past its lease of %v\n", w2.name, *stallLease)

	// The spare waits on the server until worker 2's lease runs out.
	if spare.permit, err = spare.c.Semaphore(*name, *workers).Acquire(ctx); err != nil {
		return fmt.Errorf("spare: %w", err)
	}
	t := spare.permit.Token()
	fmt.Fprintf(stdout, "spare holds slot %d with token %d\n", spare.permit.Slot(), t.Number)
	if spare.permit.Slot() != stalled || t.Number <= tokenW2 {
		return fmt.Errorf("spare got slot %d token %d, want slot %d above %d", spare.permit.Slot(), t.Number, stalled, tokenW2)
	}
	d, err := write(spare, t.Number, "taken over")
	if err := story.Accepted(spare.name, d, err); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "spare wrote partition %d with token %d\n", stalled, t.Number)

	// Worker 2 wakes up and writes with the token it had.
	fmt.Fprintf(stdout, "%s wakes up and writes partition %d with token %d\n", w2.name, stalled, tokenW2)
	d, err = write(w2, tokenW2, "late")
	if _, err := story.Refused(stdout, w2.name, w2.permit.Resource(), d, err); err != nil {
		return err
	}

	for _, w := range append(pool, spare) {
		if w == w2 {
			continue
		}
		if err := w.permit.Release(ctx); err != nil {
			return fmt.Errorf("%s: %w", w.name, err)
		}
	}
	rows, err := db.QueryContext(ctx, `SELECT partition_id, done_by, note, fence_token FROM partitions ORDER BY partition_id`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, mark int64
		var by, note string
		if err := rows.Scan(&id, &by, &note, &mark); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "partition %d: %s (%s), fence_token %d\n", id, by, note, mark)
		want := fmt.Sprintf("worker-%d", id)
		if id == stalled {
			want = "spare"
		}
		if by != want {
			return fmt.Errorf("partition %d written last by %s, want %s", id, by, want)
		}
	}
	return rows.Err()
}

// openPartitions opens the jobs' file (see sqlitedb.Open) with n
// partitions, none done yet.
func openPartitions(ctx context.Context, path *string, n int) (*sql.DB, func(), error) {
	db, closeDB, err := sqlitedb.Open(ctx, path, `
		CREATE TABLE IF NOT EXISTS partitions (
			partition_id INTEGER PRIMARY KEY,
			done_by      TEXT    NOT NULL DEFAULT '',
			note         TEXT    NOT NULL DEFAULT '',
			fence_token  BIGINT  NOT NULL DEFAULT 0
		);
		DELETE FROM partitions;`)
	if err != nil {
		return nil, nil, err
	}
	for i := 0; i < n; i++ {
		if _, err := db.ExecContext(ctx, `INSERT INTO partitions (partition_id) VALUES (?)`, i); err != nil {
			closeDB()
			return nil, nil, err
		}
	}
	return db, closeDB, nil
}
