package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fenceview/fenceview/internal/dbtest"
	"github.com/fenceview/fenceview/internal/load"
)

// startRedis runs a throwaway Redis on loopback (internal/dbtest: skipped
// when none is installed, failed under CI) and returns its address.
func startRedis(t *testing.T) string { return dbtest.Redis(t).Addr }

// startPostgres runs a throwaway PostgreSQL cluster on loopback, as
// startRedis does, and returns its connection string.
func startPostgres(t *testing.T) string {
	return "postgres://postgres@" + dbtest.PostgreSQL(t).Addr + "/postgres?sslmode=disable"
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
