package wasm

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fenceview/fenceview/guard"
)

func newGuard(t testing.TB, cfg Config) *Guard {
	t.Helper()
	ctx := context.Background()
	g, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(ctx) })
	return g
}

// Errors are the native guard's, word for word, so callers can match them
// with errors.Is and show the same reasons.
func TestErrorsMatchNative(t *testing.T) {
	g := newGuard(t, Config{})
	n := guard.New()
	for _, c := range []struct {
		id    string
		token int64
	}{{"", 1}, {"a\x00", 1}, {"\xff", 1}, {strings.Repeat("z", 161), 1}, {strings.Repeat("z", 1000), 1}, {"ok", 0}, {"ok", -3}} {
		_, e1 := n.Check(c.id, c.token)
		_, e2 := g.Check(c.id, c.token)
		if e1 == nil || e2 == nil || e1.Error() != e2.Error() {
			t.Errorf("Check(%q, %d): native %v, wasm %v", c.id, c.token, e1, e2)
		}
		_, e1 = n.Seed(c.id, c.token)
		_, e2 = g.Seed(c.id, c.token)
		if e1 == nil || e2 == nil || e1.Error() != e2.Error() {
			t.Errorf("Seed(%q, %d): native %v, wasm %v", c.id, c.token, e1, e2)
		}
	}
	if _, err := g.CheckHandle(Handle{}, 1); !errors.Is(err, guard.ErrUnknownHandle) {
		t.Errorf("zero Handle: %v", err)
	}
}

// With several instances each resource's mark lives in exactly one of them,
// so the rule holds for the whole Guard: racing goroutines, by name and by
// handle, end with the maximum, and nothing below a recorded mark is ever
// accepted.
func TestConcurrentChecksAcrossShards(t *testing.T) {
	g := newGuard(t, Config{Shards: 3})
	const workers, rounds = 6, 300
	resources := []string{"r0", "r1", "r2", "r3", "r4"}
	handles := make([]Handle, len(resources))
	for i, id := range resources {
		h, err := g.Handle(id)
		if err != nil {
			t.Fatal(err)
		}
		handles[i] = h
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 1; i <= rounds; i++ {
				tok := int64(i*workers + w)
				for k, id := range resources {
					var d guard.Decision
					var err error
					if (i+k)%2 == 0 {
						d, err = g.CheckHandle(handles[k], tok)
					} else {
						d, err = g.Check(id, tok)
					}
					if err != nil {
						t.Error(err)
						return
					}
					if d.Accepted && d.Required > tok {
						t.Errorf("%s: accepted %d below mark %d", id, tok, d.Required)
					}
				}
			}
		}(w)
	}
	wg.Wait()
	for k, id := range resources {
		want := int64(rounds*workers + workers - 1)
		if hwm, _ := g.HighWater(id); hwm != want {
			t.Errorf("%s: final mark %d, want %d", id, hwm, want)
		}
		if hwm, _ := g.HighWaterHandle(handles[k]); hwm != want {
			t.Errorf("%s by handle: final mark %d, want %d", id, hwm, want)
		}
	}
}

// Sharding must not change answers: the same calls on 1 and 5 instances.
func TestShardsAgree(t *testing.T) {
	one, five := newGuard(t, Config{Shards: 1}), newGuard(t, Config{Shards: 5})
	for i := 0; i < 300; i++ {
		id := fmt.Sprintf("res-%d", i%17)
		tok := int64((i * 7919) % 101)
		d1, e1 := one.Check(id, tok)
		d5, e5 := five.Check(id, tok)
		if d1 != d5 || (e1 == nil) != (e5 == nil) {
			t.Fatalf("Check(%s, %d): one %+v %v, five %+v %v", id, tok, d1, e1, d5, e5)
		}
	}
}

func TestSeedMap(t *testing.T) {
	g := newGuard(t, Config{Shards: 2})
	err := g.SeedMap(map[string]int64{"a": 10, "b": 3, "none": 0, "": 5, "c\n": 2})
	if err == nil || !errors.Is(err, guard.ErrInvalidResourceID) {
		t.Fatalf("SeedMap err = %v, want the invalid ids reported", err)
	}
	for id, want := range map[string]int64{"a": 10, "b": 3, "none": 0} {
		if hwm, _ := g.HighWater(id); hwm != want {
			t.Errorf("%s = %d, want %d", id, hwm, want)
		}
	}
	if d, _ := g.Check("a", 9); d.Accepted {
		t.Error("token below the seeded mark accepted")
	}
}

func TestClosed(t *testing.T) {
	ctx := context.Background()
	g, err := New(ctx, Config{})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := g.Handle("a")
	if err := g.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Check("a", 1); !errors.Is(err, ErrClosed) {
		t.Errorf("Check after Close: %v", err)
	}
	if _, err := g.CheckHandle(h, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("CheckHandle after Close: %v", err)
	}
}

// Every Guard in a process uses one compilation cache, on disk when asked.
func TestCompilationCacheDir(t *testing.T) {
	dir := t.TempDir()
	g := newGuard(t, Config{CacheDir: dir})
	if d, err := g.Check("a", 1); err != nil || !d.Accepted {
		t.Fatalf("Check = %+v, %v", d, err)
	}
	c1, _ := compilationCache(dir)
	c2, _ := compilationCache(dir)
	if c1 != c2 {
		t.Error("two caches for one directory")
	}
	entries, err := readDirRecursive(dir)
	if err != nil || entries == 0 {
		t.Fatalf("nothing cached in %s (%v)", dir, err)
	}
}

func readDirRecursive(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	return n, err
}
