package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/fenceview/fenceview/internal/load"
)

// A Redisson-style fenced lock: the lock is one key set with NX and a
// lease (PX), holding "holder:count" so that its holder may take it again;
// every grant, re-entrant ones too, INCRs the resource's token counter.
// The braces make the resource the hash tag, so both keys share a slot.
var (
	acquireScript = redis.NewScript(`
if redis.call('set', KEYS[1], ARGV[1] .. ':1', 'NX', 'PX', ARGV[2]) then
  return redis.call('incr', KEYS[2])
end
local v = redis.call('get', KEYS[1])
if v then
  local holder, n = string.match(v, '^(.*):(%d+)$')
  if holder == ARGV[1] then
    redis.call('set', KEYS[1], holder .. ':' .. (tonumber(n) + 1), 'PX', ARGV[2])
    return redis.call('incr', KEYS[2])
  end
end
return 0`)

	releaseScript = redis.NewScript(`
local v = redis.call('get', KEYS[1])
if not v then return -1 end
local holder, n = string.match(v, '^(.*):(%d+)$')
if holder ~= ARGV[1] then return -1 end
n = tonumber(n) - 1
if n > 0 then
  redis.call('set', KEYS[1], holder .. ':' .. n, 'KEEPTTL')
  return n
end
redis.call('del', KEYS[1])
return 0`)

	// The guard at the resource: compare with the stored mark and write
	// (mark and data) only when the token is not below it.
	fenceScript = redis.NewScript(`
local seen = redis.call('get', KEYS[1])
if seen and tonumber(seen) > tonumber(ARGV[1]) then return 0 end
redis.call('set', KEYS[1], ARGV[1])
redis.call('set', KEYS[2], ARGV[2])
return 1`)
)

type redisDriver struct {
	name, addr string
	rdb        *redis.Client
	leaseMs    string
	// keys per resource: lock, token counter, fence mark, data
	keys [][4]string
}

func newRedis(name, addr string) *redisDriver { return &redisDriver{name: name, addr: addr} }

func (d *redisDriver) Name() string { return d.name }

func (d *redisDriver) Prepare(ctx context.Context, s load.Setup) error {
	if d.rdb == nil {
		d.rdb = redis.NewClient(&redis.Options{
			Addr:         d.addr,
			PoolSize:     s.Clients + 8,
			MinIdleConns: s.Clients,
		})
	} else if d.rdb.Options().PoolSize < s.Clients {
		return fmt.Errorf("pool of %d connections, want %d: prepare the widest run first", d.rdb.Options().PoolSize, s.Clients)
	}
	d.leaseMs = strconv.FormatInt(s.Lease.Milliseconds(), 10)
	d.keys = make([][4]string, len(s.Resources))
	for i, r := range s.Resources {
		t := "{" + r + "}"
		d.keys[i] = [4]string{t + ":lock", t + ":token", t + ":fence", t + ":data"}
	}
	for _, sc := range []*redis.Script{acquireScript, releaseScript, fenceScript} {
		if err := sc.Load(ctx, d.rdb).Err(); err != nil {
			return err
		}
	}
	return nil
}

func (d *redisDriver) NewClient(id int, holder string) (load.Client, error) {
	return newPeerClient(d, id, holder)
}

func (d *redisDriver) Close() error { return load.CloseOpened(d.rdb) }

func (d *redisDriver) acquire(ctx context.Context, w *writer, r int) (int64, error) {
	k := &d.keys[r]
	tok, err := acquireScript.EvalSha(ctx, d.rdb, k[:2], w.holder, d.leaseMs).Int64()
	if err != nil {
		return 0, err
	}
	if tok == 0 {
		return 0, load.ErrBusy
	}
	return tok, nil
}

func (d *redisDriver) release(ctx context.Context, w *writer, r int) error {
	k := &d.keys[r]
	n, err := releaseScript.EvalSha(ctx, d.rdb, k[:1], w.holder).Int64()
	if err != nil {
		return err
	}
	if n < 0 {
		return errors.New("release: not lock owner")
	}
	return nil
}

func (d *redisDriver) fence(ctx context.Context, w *writer, r int, token int64) (bool, error) {
	k := &d.keys[r]
	ok, err := fenceScript.EvalSha(ctx, d.rdb, k[2:], token, w.next()).Int64()
	return ok == 1, err
}
