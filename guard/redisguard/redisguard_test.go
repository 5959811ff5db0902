package redisguard_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/redisguard"
	"github.com/fenceview/fenceview/guard/redisguard/goredis"
	"github.com/fenceview/fenceview/internal/dbtest"
	"github.com/fenceview/fenceview/internal/guardtest"
)

// startRedis starts a real redis-server and returns a client on it.
func startRedis(t testing.TB, extra ...string) *redis.Client {
	t.Helper()
	srv := dbtest.Redis(t, extra...)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	t.Logf("%s", srv.Version)
	return rdb
}

func newGuard(t testing.TB, rdb redis.Scripter, cfg redisguard.Config) *redisguard.Guard {
	t.Helper()
	cfg.Scripter = goredis.New(rdb)
	g, err := redisguard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestRedis runs everything against one real server.
func TestRedis(t *testing.T) {
	rdb := startRedis(t)
	g := newGuard(t, rdb, redisguard.Config{})
	ctx := context.Background()

	var next atomic.Int64
	t.Run("cases", func(t *testing.T) {
		guardtest.Run(t, func(t *testing.T) guardtest.Resource {
			return &resource{g: g, id: "case:" + strconv.FormatInt(next.Add(1), 10)}
		})
	})

	t.Run("cases with a key prefix", func(t *testing.T) {
		pg := newGuard(t, rdb, redisguard.Config{Prefix: "shop:"})
		guardtest.Run(t, func(t *testing.T) guardtest.Resource {
			return &resource{g: pg, id: "case:" + strconv.FormatInt(next.Add(1), 10)}
		})
		k, _ := pg.Key("inventory:42", "stock")
		if k != "shop:{inventory:42}:stock" {
			t.Fatalf("key = %q", k)
		}
	})

	t.Run("multi-value write is all or nothing", func(t *testing.T) {
		res := "inventory:42"
		d, err := g.Write(ctx, res, 42, redisguard.Set("stock", "7"), redisguard.Set("reserved", "2"), redisguard.Set("note", ""))
		if err != nil || !d.Accepted || d.Required != 0 {
			t.Fatalf("B's write = %+v, %v", d, err)
		}
		d, err = g.Write(ctx, res, 41, redisguard.Set("stock", "9"), redisguard.Set("reserved", "0"), redisguard.Set("extra", "x"))
		want := guard.Decision{Accepted: false, Reason: guard.ReasonStale, Presented: 41, Required: 42}
		if err != nil || d != want {
			t.Fatalf("A's write = %+v, %v; want %+v", d, err, want)
		}
		// What is in Redis, read with the plain client under the
		// documented key names: B's values, untouched, and nothing of A's.
		got := map[string]string{}
		for _, n := range []string{"fence_token", "stock", "reserved", "note", "extra"} {
			v, err := rdb.Get(ctx, "{"+res+"}:"+n).Result()
			if err == redis.Nil {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			got[n] = v
		}
		if fmt.Sprint(got) != fmt.Sprint(map[string]string{"fence_token": "42", "stock": "7", "reserved": "2", "note": ""}) {
			t.Fatalf("keys in Redis = %v", got)
		}
		mark, vals, err := g.Read(ctx, res, "stock", "reserved", "extra")
		if err != nil || mark != 42 || fmt.Sprint(vals) != "map[reserved:2 stock:7]" {
			t.Fatalf("Read = %d %v %v", mark, vals, err)
		}
		if hw, err := g.HighWater(ctx, res); err != nil || hw != 42 {
			t.Fatalf("HighWater = %d, %v", hw, err)
		}
		if hw, err := g.HighWater(ctx, "never-written"); err != nil || hw != 0 {
			t.Fatalf("HighWater of a new resource = %d, %v", hw, err)
		}
		// An accepted write reports the mark it replaced.
		if d, err := g.Write(ctx, res, 50, redisguard.Set("stock", "6")); err != nil || !d.Accepted || d.Required != 42 {
			t.Fatalf("next write = %+v, %v", d, err)
		}
	})

	t.Run("check without values, as a guard.Guard", func(t *testing.T) {
		guardtest.Agree(t, guardtest.Steps(), true, g.Check)
	})

	t.Run("a mark that is not a token is an error, never a decision", func(t *testing.T) {
		for _, bad := range []string{"abc", "-5", "007", "1.5", "99999999999999999999", ""} {
			key, _ := g.MarkKey("poisoned")
			rdb.Set(ctx, key, bad, 0)
			d, err := g.Write(ctx, "poisoned", 10, redisguard.Set("v", "x"))
			if err == nil {
				t.Errorf("mark %q: decision %+v, want an error", bad, d)
			}
			if n, _ := rdb.Exists(ctx, "{poisoned}:v").Result(); n != 0 {
				t.Errorf("mark %q: the value was written", bad)
			}
		}
	})

	t.Run("bad calls send nothing", func(t *testing.T) {
		before, _ := rdb.DBSize(ctx).Result()
		many := make([]redisguard.Value, redisguard.MaxValues+1)
		for i := range many {
			many[i] = redisguard.Set("v"+strconv.Itoa(i), "x")
		}
		for name, call := range map[string]func() error{
			"zero token":       func() error { _, err := g.Write(ctx, "r", 0); return err },
			"'}' in the id":    func() error { _, err := g.Write(ctx, "a}b", 1); return err },
			"empty id":         func() error { _, err := g.Write(ctx, "", 1); return err },
			"empty value name": func() error { _, err := g.Write(ctx, "r", 1, redisguard.Set("", "x")); return err },
			"mark's name":      func() error { _, err := g.Write(ctx, "r", 1, redisguard.Set("fence_token", "1")); return err },
			"name twice": func() error {
				_, err := g.Write(ctx, "r", 1, redisguard.Set("a", "1"), redisguard.Set("a", "2"))
				return err
			},
			"too many values": func() error { _, err := g.Write(ctx, "r", 1, many...); return err },
			"long name": func() error {
				_, err := g.Write(ctx, "r", 1, redisguard.Set(strings.Repeat("n", 201), "x"))
				return err
			},
			"read with bad name": func() error { _, _, err := g.Read(ctx, "r", ""); return err },
			"prefix with a tag": func() error {
				_, err := redisguard.New(redisguard.Config{Scripter: goredis.New(rdb), Prefix: "{x}"})
				return err
			},
			"nil scripter": func() error { _, err := redisguard.New(redisguard.Config{}); return err },
		} {
			if err := call(); err == nil {
				t.Errorf("%s: no error", name)
			}
		}
		if _, err := g.Write(ctx, "a}b", 1); !errors.Is(err, guard.ErrInvalidResourceID) {
			t.Errorf("'}' in the id: %v, want guard.ErrInvalidResourceID", err)
		}
		if after, _ := rdb.DBSize(ctx).Result(); after != before {
			t.Errorf("keys %d -> %d after bad calls", before, after)
		}
	})

	t.Run("the script is sent once, then run by its SHA-1", func(t *testing.T) {
		if err := rdb.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		rec := &recScripter{Scripter: rdb}
		rg := newGuard(t, rec, redisguard.Config{})
		for tok := int64(1); tok <= 3; tok++ {
			if d, err := rg.Write(ctx, "sha", tok, redisguard.Set("v", "x")); err != nil || !d.Accepted {
				t.Fatalf("%+v %v", d, err)
			}
		}
		if got := strings.Join(rec.calls, ","); got != "EVALSHA,EVAL,EVALSHA,EVALSHA" {
			t.Fatalf("calls = %s", got)
		}
	})
}

// recScripter records which script command go-redis was asked for.
type recScripter struct {
	redis.Scripter
	calls []string
}

func (r *recScripter) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	r.calls = append(r.calls, "EVAL")
	return r.Scripter.Eval(ctx, script, keys, args...)
}

func (r *recScripter) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	r.calls = append(r.calls, "EVALSHA")
	return r.Scripter.EvalSha(ctx, sha1, keys, args...)
}

// All keys of one resource share a hash slot, by the server's own
// computation, and a Redis running in cluster mode takes the script's keys
// together. The node owns every slot; for its first seconds a new node
// reports the cluster down, so a write may succeed or meet CLUSTERDOWN, but
// keys of different slots are refused with CROSSSLOT before that state is
// looked at (the untagged control shows it).
func TestRedisClusterHashTags(t *testing.T) {
	rdb := startRedis(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	ctx := context.Background()
	if err := rdb.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"", "shop:"} {
		g := newGuard(t, rdb, redisguard.Config{Prefix: prefix})
		for _, res := range []string{"inventory:42", "{a", "ü/ß x", "a:b:c"} {
			mk, _ := g.MarkKey(res)
			want, err := rdb.ClusterKeySlot(ctx, mk).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []string{"stock", "reserved", "a}b", "{x}"} {
				k, err := g.Key(res, n)
				if err != nil {
					t.Fatal(err)
				}
				if slot, _ := rdb.ClusterKeySlot(ctx, k).Result(); slot != want {
					t.Errorf("%q in slot %d, its mark %q in %d", k, slot, mk, want)
				}
			}
			_, err = g.Write(ctx, res, 1, redisguard.Set("stock", "1"), redisguard.Set("reserved", "0"))
			if err != nil && !strings.HasPrefix(err.Error(), "redisguard: write "+strconv.Quote(res)+": CLUSTERDOWN") {
				t.Errorf("write of %q on a cluster node = %v; want success or CLUSTERDOWN, never CROSSSLOT", res, err)
			}
		}
	}
	err := rdb.Eval(ctx, "return 1", []string{"inventory:42:stock", "inventory:42:fence_token"}).Err()
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("untagged keys = %v; the check above would prove nothing", err)
	}
}

// resource is one guardtest resource: a value named "value" under id.
type resource struct {
	g  *redisguard.Guard
	id string
}

func (r *resource) Write(ctx context.Context, token int64, value string) (guard.Decision, error) {
	return r.g.Write(ctx, r.id, token, redisguard.Set("value", value))
}

func (r *resource) Read(ctx context.Context) (string, int64, error) {
	mark, vals, err := r.g.Read(ctx, r.id, "value")
	return vals["value"], mark, err
}

func (r *resource) BadCalls() map[string]func(context.Context) error {
	write := func(id string, vs ...redisguard.Value) func(context.Context) error {
		return func(ctx context.Context) error { _, err := r.g.Write(ctx, id, 99, vs...); return err }
	}
	return map[string]func(context.Context) error{
		"'}' in the id":       write(r.id+"}", redisguard.Set("value", "bad")),
		"control character":   write(r.id+"\x00", redisguard.Set("value", "bad")),
		"161-byte id":         write(r.id+strings.Repeat("x", 161), redisguard.Set("value", "bad")),
		"value named as mark": write(r.id, redisguard.Set("value", "bad"), redisguard.Set("fence_token", "1")),
		"value given twice":   write(r.id, redisguard.Set("value", "bad"), redisguard.Set("value", "worse")),
	}
}

// A Guard stands wherever the other mark keepers do (the HTTP middleware,
// callguard.Call).
var (
	_ guard.Checker        = (*redisguard.Guard)(nil)
	_ guard.ContextChecker = (*redisguard.Guard)(nil)
)
