package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The Redisson-style semaphore the primitives' benchmark compares with is
// a semaphore: never more permits out than its count, a permit back frees
// one, the count fixed by the first acquire, and every permit a new token.
func TestRedisSemaphoreScript(t *testing.T) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: startRedis(t)})
	defer rdb.Close()
	keys := []string{"{s}:permits", "{s}:timeout", "{s}:token"}
	acquire := func(id string, permits int) int64 {
		t.Helper()
		n, err := semAcquireScript.Run(ctx, rdb, keys, permits, id, 30000).Int64()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if a, b := acquire("a", 2), acquire("b", 2); a != 1 || b != 2 {
		t.Fatalf("tokens %d, %d", a, b)
	}
	if n := acquire("c", 2); n != 0 {
		t.Fatalf("a third permit of two: %d", n)
	}
	if n := acquire("c", 3); n != -1 {
		t.Fatalf("another permits count: %d", n)
	}
	if n, err := semReleaseScript.Run(ctx, rdb, keys[1:2], "a").Int64(); err != nil || n != 1 {
		t.Fatalf("release: %d %v", n, err)
	}
	if n := acquire("c", 2); n != 3 {
		t.Fatalf("after a release: %d", n)
	}
}

// The primitives' benchmark runs its Redis rows and prints their table.
func TestPrimitivesBenchmarkRuns(t *testing.T) {
	var out bytes.Buffer
	err := runPrimitives(context.Background(), primitiveConfig{redisAOF: startRedis(t), clients: 4, permits: 2, resources: 16,
		duration: 100 * time.Millisecond, warmup: 10 * time.Millisecond}, &out)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"Redisson-style semaphore (2 permits)", "4 sequential acquires"} {
		if !strings.Contains(out.String(), row) {
			t.Errorf("no row %q in\n%s", row, out.String())
		}
	}
}
