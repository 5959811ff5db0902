// Command redisinventory plays the story fencing tokens exist for, against
// a fenceview server and an inventory kept in Redis:
//
//  1. Client A locks inventory:42 and gets a token.
//  2. A pauses (a GC pause, a stalled VM) past its lease.
//  3. The lease runs out; client B locks and writes stock and reserved
//     under its larger token, in one fenced write.
//  4. A wakes up, still believing it holds the lock, and writes.
//
// Step 4 is refused by Redis itself: redisguard's Lua script compares A's
// token with the mark B left and writes nothing. The refusal is reported
// to the fenceview server, so it shows in the rejection history.
//
//	go run ./examples/redisinventory -redis 127.0.0.1:6379
//	go run ./examples/redisinventory -redis 127.0.0.1:6379 -server http://127.0.0.1:8080
package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/examples/internal/story"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/redisguard"
	"github.com/fenceview/fenceview/guard/redisguard/goredis"
	"github.com/fenceview/fenceview/internal/cmdmain"
)

func main() { cmdmain.Main("redisinventory", run) }

// run plays the story and returns an error unless A's write was refused,
// B's values are in Redis and the refusal was reported.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	cmd := story.NewCommand("redisinventory")
	paused := cmd.PausedFlags()
	addr := cmd.Required("redis", "the Redis or Valkey server to write to, host:port")
	c, closeAll, err := cmd.Connect(ctx, args)
	if err != nil {
		return err
	}
	defer closeAll()
	rdb := redis.NewClient(&redis.Options{Addr: *addr})
	defer rdb.Close()
	// A fresh namespace per run, so earlier runs' marks do not refuse this
	// run's tokens (a new server starts its tokens at 1).
	g, err := redisguard.New(redisguard.Config{Scripter: goredis.New(rdb), Prefix: fmt.Sprintf("redisinventory:%d:", time.Now().UnixNano())})
	if err != nil {
		return err
	}

	// A locks and stalls past its lease; B locks with a newer token.
	race, err := story.Pause(ctx, c, paused, ", will write stock 9", stdout)
	if err != nil {
		return err
	}
	tokenB := race.TokenB
	d, err := g.Write(ctx, paused.Resource, tokenB, redisguard.Set("stock", "7"), redisguard.Set("reserved", "3"))
	if err := story.Accepted("B", d, err); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "B wrote stock 7, reserved 3 with token %d\n", tokenB)

	// A wakes up and writes without looking: Redis has to refuse it.
	d, refused, err := race.Late(ctx, stdout, func(token int64) (guard.Decision, error) {
		return g.Write(ctx, paused.Resource, token, redisguard.Set("stock", "9"), redisguard.Set("reserved", "0"))
	})
	if err != nil {
		return err
	}

	// Report it, as any guard that decides on its own does.
	n, err := c.Report(ctx, client.Report{Resource: paused.Resource, Decision: d, Source: "inventory-redis"})
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	fmt.Fprintf(stdout, "refusals reported to fenceview: %d\n", n)

	mark, vals, err := g.Read(ctx, paused.Resource, "stock", "reserved")
	if err != nil {
		return err
	}
	stockKey, _ := g.Key(paused.Resource, "stock")
	fmt.Fprintf(stdout, "%s: stock %s, reserved %s, mark %d (key %s)\n", paused.Resource, vals["stock"], vals["reserved"], mark, stockKey)
	if vals["stock"] != "7" || vals["reserved"] != "3" || mark != tokenB || refused.Required != tokenB || n != 1 {
		return fmt.Errorf("unexpected end state: %v, mark %d, required %d, reported %d", vals, mark, refused.Required, n)
	}
	return nil
}
