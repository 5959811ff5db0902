package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceview/fenceview/internal/load"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startRedis runs a throwaway redis-server on loopback, or skips.
func startRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil || testing.Short() {
		t.Skip("redis-server not installed (or -short)")
	}
	port := freePort(t)
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", t.TempDir(),
		"--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	for i := 0; rdb.Ping(context.Background()).Err() != nil; i++ {
		if i == 100 {
			t.Fatal("redis-server did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return addr
}

// startPostgres runs a throwaway cluster on loopback (as the postgres user
// when root: PostgreSQL refuses to run as root), or skips.
func startPostgres(t *testing.T) string {
	t.Helper()
	pgbin := ""
	if p, err := exec.LookPath("initdb"); err == nil {
		pgbin = filepath.Dir(p)
	} else if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(m) > 0 {
		pgbin = filepath.Dir(m[len(m)-1])
	}
	if pgbin == "" || testing.Short() {
		t.Skip("PostgreSQL not installed (or -short)")
	}
	dir, err := os.MkdirTemp("", "fenceview-bench-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var prefix []string
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skip("root without a postgres user")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		prefix = []string{"runuser", "-u", "postgres", "--"}
	}
	run := func(args ...string) {
		t.Helper()
		args = append(prefix, args...)
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	data := filepath.Join(dir, "data")
	port := freePort(t)
	run(filepath.Join(pgbin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust", "--no-sync")
	run(filepath.Join(pgbin, "pg_ctl"), "-D", data, "-w", "-l", filepath.Join(dir, "log"),
		"-o", fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off", port, dir), "start")
	t.Cleanup(func() { run(filepath.Join(pgbin, "pg_ctl"), "-D", data, "-m", "immediate", "stop") })
	return fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable", port)
}

// Every peer's lock is re-entrant by holder with a new token per grant,
// refuses other holders, and frees at the last release; its guard refuses
// a token below the mark and accepts one equal to it.
func checkPeerSemantics(t *testing.T, d load.Driver, reentrant bool) {
	ctx := context.Background()
	if err := d.Prepare(ctx, load.Setup{Resources: []string{"sem-0"}, Clients: 2, Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	a, _ := d.NewClient(0, "holder-a")
	b, _ := d.NewClient(1, "holder-b")
	t1, err := a.Acquire(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx, 0); !errors.Is(err, load.ErrBusy) {
		t.Fatalf("second holder: %v, want busy", err)
	}
	t2, err := a.Acquire(ctx, 0)
	if err != nil || t2 <= t1 {
		t.Fatalf("re-entrant grant: %d, %v after %d", t2, err, t1)
	}
	if err := b.Release(ctx, 0); err == nil {
		t.Fatal("release by another holder succeeded")
	}
	if reentrant {
		if err := a.Release(ctx, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Acquire(ctx, 0); !errors.Is(err, load.ErrBusy) {
			t.Fatalf("after one of two releases: %v, want busy", err)
		}
	}
	if err := a.Release(ctx, 0); err != nil {
		t.Fatal(err)
	}
	t3, err := b.Acquire(ctx, 0)
	if err != nil || t3 <= t2 {
		t.Fatalf("after release: %d, %v, want above %d", t3, err, t2)
	}
	for _, c := range []struct {
		tok  int64
		want bool
	}{{t3, true}, {t3, true}, {t2, false}, {t3 + 1, true}, {t3, false}} {
		ok, err := b.Fence(ctx, 0, c.tok)
		if err != nil || ok != c.want {
			t.Fatalf("fence %d: %v, %v; want %v", c.tok, ok, err, c.want)
		}
	}
}

func runMixed(t *testing.T, d load.Driver) {
	rep, err := load.Run(context.Background(), load.Config{
		Clients: 8, Resources: 16, Duration: 300 * time.Millisecond, Mix: load.Mix{Grant: 1, Fence: 1, Stale: 1}, Prefix: "mixed",
	}, d)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestRedisDriver(t *testing.T) {
	d := newRedis("redis", startRedis(t))
	defer d.Close()
	checkPeerSemantics(t, d, true)
	runMixed(t, d)
}

func TestPostgresDriver(t *testing.T) {
	d := newPostgres(startPostgres(t))
	defer d.Close()
	// The seed's SQL keeps no hold count: one release frees the lock.
	checkPeerSemantics(t, d, false)
	runMixed(t, d)
}

func TestSQLiteDriverSemantics(t *testing.T) {
	d := newSQLite(t.TempDir())
	defer d.Close()
	checkPeerSemantics(t, d, false)
}
