package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// The primitives' benchmark (-primitives): semaphore acquire/release
// cycles/s, fenceview's fenced semaphore against a Redisson-style
// semaphore in a Redis Lua script, and a multi-lock of 4 locks against 4
// sequential acquires (as RedissonMultiLock takes its locks). A cycle is
// one grant and its release; an attempt refused because every permit (or
// one of the locks) is taken counts as busy and the client tries again.

// primitiveConfig is one run of the primitives' benchmark.
type primitiveConfig struct {
	fenceview, key string // base URL and API key ("" with auth off)
	redisAOF       string // host:port of a Redis with appendfsync always ("" skips it)
	clients        int
	permits        int // of the one semaphore
	resources      int // the multi-locks' pool
	duration       time.Duration
	warmup         time.Duration
}

// primitiveCycle runs one cycle of a client; busy when refused.
type primitiveCycle func(ctx context.Context, rng *rand.Rand) (busy bool, err error)

type primitiveResult struct {
	name       string
	cyclesPerS float64
	busyPerS   float64
	p50, p99   time.Duration
}

func runPrimitives(ctx context.Context, cfg primitiveConfig, out io.Writer) error {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.clients, MaxConnsPerHost: cfg.clients}, Timeout: time.Minute}
	run := fmt.Sprintf("%x", time.Now().UnixNano()&0xffffff)
	type bench struct {
		name string
		make func(c int) primitiveCycle
	}
	var benches []bench
	if cfg.fenceview != "" {
		fv := &fenceviewPrimitives{base: cfg.fenceview, key: cfg.key, hc: hc}
		benches = append(benches,
			bench{"fenceview lock (1 of the resources)", func(c int) primitiveCycle {
				return fv.lockCycle("bench-lock-"+run+"-", fmt.Sprintf("c%d", c), cfg.resources)
			}},
			bench{fmt.Sprintf("fenceview semaphore (%d permits)", cfg.permits), func(c int) primitiveCycle {
				return fv.semaphoreCycle("bench-sem-"+run, fmt.Sprintf("c%d", c), cfg.permits, 0)
			}},
			bench{fmt.Sprintf("fenceview semaphore (%d permits), waiting", cfg.permits), func(c int) primitiveCycle {
				return fv.semaphoreCycle("bench-semw-"+run, fmt.Sprintf("c%d", c), cfg.permits, 30000)
			}},
			bench{"fenceview acquire-all of 4", func(c int) primitiveCycle {
				return fv.multiCycle("bench-ml-"+run+"-", fmt.Sprintf("c%d", c), cfg.resources)
			}},
			bench{"fenceview 4 sequential acquires", func(c int) primitiveCycle {
				return fv.sequentialCycle("bench-seq-"+run+"-", fmt.Sprintf("c%d", c), cfg.resources)
			}})
	}
	if cfg.redisAOF != "" {
		rdb := redis.NewClient(&redis.Options{Addr: cfg.redisAOF, PoolSize: cfg.clients + 8, MinIdleConns: cfg.clients})
		defer rdb.Close()
		for _, sc := range []*redis.Script{semAcquireScript, semReleaseScript, acquireScript, releaseScript} {
			if err := sc.Load(ctx, rdb).Err(); err != nil {
				return err
			}
		}
		benches = append(benches,
			bench{fmt.Sprintf("redis (AOF always) Redisson-style semaphore (%d permits)", cfg.permits), func(c int) primitiveCycle {
				return redisSemaphoreCycle(rdb, "bench-sem-"+run, fmt.Sprintf("c%d", c), cfg.permits)
			}},
			bench{"redis (AOF always) 4 sequential acquires", func(c int) primitiveCycle {
				return redisSequentialCycle(rdb, "bench-seq-"+run+"-", fmt.Sprintf("c%d", c), cfg.resources)
			}})
	}
	if len(benches) == 0 {
		return fmt.Errorf("-primitives needs -fenceview or -redis-aof")
	}
	fmt.Fprintf(out, "%d clients, %v per cell after %v warm-up; semaphore of %d permits; multi-locks of 4 of %d resources\n\n",
		cfg.clients, cfg.duration, cfg.warmup, cfg.permits, cfg.resources)
	rows := [][]string{{"workload, " + strconv.Itoa(cfg.clients) + " clients", "cycles/s", "busy/s", "p50 ms", "p99 ms"}}
	for _, b := range benches {
		r, err := measurePrimitive(ctx, b.name, cfg, b.make)
		if err != nil {
			return fmt.Errorf("%s: %w", b.name, err)
		}
		rows = append(rows, []string{r.name, fmt.Sprintf("%.0f", r.cyclesPerS), fmt.Sprintf("%.0f", r.busyPerS),
			fmt.Sprintf("%.2f", float64(r.p50.Microseconds())/1000), fmt.Sprintf("%.2f", float64(r.p99.Microseconds())/1000)})
	}
	markdown(out, rows)
	return nil
}

// measurePrimitive runs cfg.clients clients of one cycle for the warm-up
// and then the measured time, and times the granted cycles.
func measurePrimitive(ctx context.Context, name string, cfg primitiveConfig, mk func(c int) primitiveCycle) (primitiveResult, error) {
	var measuring atomic.Bool
	var cycles, busy atomic.Int64
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	for c := range cfg.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cycle := mk(c)
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			var mine []time.Duration
			for ctx.Err() == nil {
				start := time.Now()
				b, err := cycle(ctx, rng)
				if err != nil {
					if ctx.Err() == nil {
						mu.Lock()
						firstErr = cmpErr(firstErr, err)
						mu.Unlock()
						cancel()
					}
					break
				}
				if !measuring.Load() {
					continue
				}
				if b {
					busy.Add(1)
				} else {
					cycles.Add(1)
					mine = append(mine, time.Since(start))
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	select {
	case <-time.After(cfg.warmup):
	case <-ctx.Done():
	}
	measuring.Store(true)
	start := time.Now()
	select {
	case <-time.After(cfg.duration):
	case <-ctx.Done():
	}
	measuring.Store(false)
	elapsed := time.Since(start)
	cancel()
	wg.Wait()
	if firstErr != nil {
		return primitiveResult{}, firstErr
	}
	if len(lat) == 0 {
		return primitiveResult{}, fmt.Errorf("no cycle completed")
	}
	slices.Sort(lat)
	return primitiveResult{name: name, cyclesPerS: float64(cycles.Load()) / elapsed.Seconds(), busyPerS: float64(busy.Load()) / elapsed.Seconds(),
		p50: lat[len(lat)/2], p99: lat[len(lat)*99/100]}, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// fenceviewPrimitives talks to fenceview's JSON API.
type fenceviewPrimitives struct {
	base, key string
	hc        *http.Client
}

// post sends body to path and decodes the answer into v (nil: discard).
func (f *fenceviewPrimitives) post(ctx context.Context, path string, body any, v any) (int, error) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, "POST", f.base+path, bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if f.key != "" {
		req.Header.Set("Authorization", "Bearer "+f.key)
	}
	resp, err := f.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || v == nil {
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	return resp.StatusCode, json.NewDecoder(resp.Body).Decode(v)
}

type fencing struct {
	Token int64 `json:"token"`
}

type grantAnswer struct {
	ResourceID string  `json:"resourceId"`
	Slot       int     `json:"slot"`
	Fencing    fencing `json:"fencing"`
}

// semaphoreCycle takes a permit of the semaphore name and gives it back.
// With waitMs it waits, first come first served, in the server.
func (f *fenceviewPrimitives) semaphoreCycle(name, holder string, permits, waitMs int) primitiveCycle {
	return func(ctx context.Context, _ *rand.Rand) (bool, error) {
		var g grantAnswer
		held, err := f.take(ctx, "semaphore acquire", "/v1/semaphores/"+name+"/acquire", map[string]any{"holder": holder, "permits": permits, "waitMs": waitMs}, &g)
		if held || err != nil {
			return held, err
		}
		return false, f.giveBack(ctx, "semaphore release", "/v1/semaphores/"+name+"/release", map[string]any{"holder": holder, "slot": g.Slot})
	}
}

// lockCycle takes one lock of n and releases it: the baseline the other
// rows compare with, on the same machine at the same moment.
func (f *fenceviewPrimitives) lockCycle(prefix, holder string, n int) primitiveCycle {
	return func(ctx context.Context, rng *rand.Rand) (bool, error) {
		id := prefix + strconv.Itoa(rng.IntN(n))
		if held, err := f.acquire(ctx, id, holder, nil); held || err != nil {
			return held, err
		}
		return false, f.release(ctx, id, holder)
	}
}

// acquire takes lock id for holder, decoding the grant into grant unless
// it is nil; held says another holder has the lock.
func (f *fenceviewPrimitives) acquire(ctx context.Context, id, holder string, grant any) (held bool, err error) {
	return f.take(ctx, "acquire "+id, "/v1/locks/"+id+"/acquire", map[string]any{"holder": holder}, grant)
}

// release gives lock id back.
func (f *fenceviewPrimitives) release(ctx context.Context, id, holder string) error {
	return f.giveBack(ctx, "release "+id, "/v1/locks/"+id+"/release", map[string]any{"holder": holder})
}

// take posts an acquire of what, decoding the grant into grant unless it
// is nil; held is the server's 409 (held by another, no permit free).
func (f *fenceviewPrimitives) take(ctx context.Context, what, path string, body map[string]any, grant any) (held bool, err error) {
	status, err := f.post(ctx, path, body, grant)
	switch {
	case err != nil:
		return false, err
	case status == 409:
		return true, nil
	case status != 200:
		return false, fmt.Errorf("%s: %d", what, status)
	}
	return false, nil
}

// giveBack posts a release of what, which must succeed.
func (f *fenceviewPrimitives) giveBack(ctx context.Context, what, path string, body map[string]any) error {
	if status, err := f.post(ctx, path, body, nil); err != nil || status != 200 {
		return fmt.Errorf("%s: %d %v", what, status, err)
	}
	return nil
}

// fourOf picks 4 distinct resources of n.
func fourOf(rng *rand.Rand, prefix string, n int) []string {
	ids := make([]string, 0, 4)
	for len(ids) < 4 {
		id := prefix + strconv.Itoa(rng.IntN(n))
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// multiCycle takes 4 locks with one acquire-all and gives them back with
// one release-all.
func (f *fenceviewPrimitives) multiCycle(prefix, holder string, n int) primitiveCycle {
	return func(ctx context.Context, rng *rand.Rand) (bool, error) {
		ids := fourOf(rng, prefix, n)
		var g struct{ Grants []grantAnswer }
		held, err := f.take(ctx, "acquire-all", "/v1/locks/acquire-all", map[string]any{"resources": ids, "holder": holder}, &g)
		if held || err != nil {
			return held, err
		}
		if len(g.Grants) != 4 {
			return false, fmt.Errorf("acquire-all: %d grants", len(g.Grants))
		}
		return false, f.giveBack(ctx, "release-all", "/v1/locks/release-all", map[string]any{"resources": ids, "holder": holder})
	}
}

// sequentialCycle takes the same 4 locks as multiCycle one acquire at a
// time (see oneAtATime).
func (f *fenceviewPrimitives) sequentialCycle(prefix, holder string, n int) primitiveCycle {
	return oneAtATime(prefix, n, func(ctx context.Context, id string) (bool, error) {
		var g grantAnswer
		return f.acquire(ctx, id, holder, &g)
	}, func(ctx context.Context, id string) error {
		return f.release(ctx, id, holder)
	})
}

// oneAtATime is a cycle that takes 4 locks one acquire at a time, in a
// global order (so that clients cannot deadlock), giving back what it
// took when one is held, then releases each. acquire says whether the
// lock was held by another.
func oneAtATime(prefix string, n int, acquire func(ctx context.Context, id string) (held bool, err error), release func(ctx context.Context, id string) error) primitiveCycle {
	releaseAll := func(ctx context.Context, ids []string) error {
		for _, id := range ids {
			if err := release(ctx, id); err != nil {
				return err
			}
		}
		return nil
	}
	return func(ctx context.Context, rng *rand.Rand) (bool, error) {
		ids := fourOf(rng, prefix, n)
		slices.Sort(ids)
		for i, id := range ids {
			held, err := acquire(ctx, id)
			if err != nil {
				return false, err
			}
			if held {
				return true, releaseAll(ctx, ids[:i])
			}
		}
		return false, releaseAll(ctx, ids)
	}
}

// A Redisson-style expirable semaphore (RPermitExpirableSemaphore): the
// permits taken are a sorted set of permit ids scored by their expiry,
// pruned at each acquire; the permits count is fixed by the first
// acquire; every grant INCRs the semaphore's token counter, so a permit
// carries a token (one counter per semaphore: Redis has no slots). One
// script, so one round trip, as Redisson's.
var (
	semAcquireScript = redis.NewScript(`
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('zremrangebyscore', KEYS[2], '-inf', now)
local permits = tonumber(redis.call('get', KEYS[1]) or '0')
if permits == 0 then
  permits = tonumber(ARGV[1])
  redis.call('set', KEYS[1], permits)
elseif permits ~= tonumber(ARGV[1]) then
  return -1
end
if redis.call('zcard', KEYS[2]) >= permits then return 0 end
redis.call('zadd', KEYS[2], now + tonumber(ARGV[3]), ARGV[2])
return redis.call('incr', KEYS[3])`)

	semReleaseScript = redis.NewScript(`return redis.call('zrem', KEYS[1], ARGV[1])`)
)

func redisSemaphoreCycle(rdb *redis.Client, name, holder string, permits int) primitiveCycle {
	t := "{" + name + "}"
	keys := []string{t + ":permits", t + ":timeout", t + ":token"}
	n := 0
	return func(ctx context.Context, _ *rand.Rand) (bool, error) {
		n++
		id := holder + ":" + strconv.Itoa(n)
		tok, err := semAcquireScript.EvalSha(ctx, rdb, keys, permits, id, 30000).Int64()
		switch {
		case err != nil:
			return false, err
		case tok == 0:
			return true, nil
		case tok < 0:
			return false, fmt.Errorf("permits mismatch")
		}
		if ok, err := semReleaseScript.EvalSha(ctx, rdb, keys[1:2], id).Int64(); err != nil || ok != 1 {
			return false, fmt.Errorf("semaphore release: %d %v", ok, err)
		}
		return false, nil
	}
}

// redisSequentialCycle is sequentialCycle on the Redisson-style lock of
// redis.go: RedissonMultiLock takes its locks one after the other.
func redisSequentialCycle(rdb *redis.Client, prefix, holder string, n int) primitiveCycle {
	keys := func(id string) []string { t := "{" + id + "}"; return []string{t + ":lock", t + ":token"} }
	return oneAtATime(prefix, n, func(ctx context.Context, id string) (bool, error) {
		tok, err := acquireScript.EvalSha(ctx, rdb, keys(id), holder, "30000").Int64()
		return err == nil && tok == 0, err
	}, func(ctx context.Context, id string) error {
		if r, err := releaseScript.EvalSha(ctx, rdb, keys(id)[:1], holder).Int64(); err != nil || r < 0 {
			return fmt.Errorf("release %s: %d %v", id, r, err)
		}
		return nil
	})
}
