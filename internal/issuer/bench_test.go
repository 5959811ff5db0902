package issuer

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/benchenv"
	"github.com/fenceview/fenceview/internal/clock"
	"github.com/fenceview/fenceview/internal/signing"
)

// The grant path without the disk (a no-op store): acquire and release of
// one of 1,024 locks by one client, with and without stream subscribers
// reading every event, and a refused acquire of a held lock.
//
//	go test ./internal/issuer -run '^$' -bench Acquire -benchmem
func BenchmarkAcquire(b *testing.B) {
	b.Run("grant+release/subscribers=0", func(b *testing.B) { benchGrants(b, 0) })
	b.Run("grant+release/subscribers=4", func(b *testing.B) { benchGrants(b, 4) })
	b.Run("refused", func(b *testing.B) {
		s := New(nopStore{}, nil, 0, Config{SweepInterval: time.Hour})
		defer s.Close()
		if _, err := s.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "held", Holder: "a", Lease: time.Hour}); err != nil {
			b.Fatal(err)
		}
		cpu0 := benchenv.CPUTime()
		for b.Loop() {
			if _, err := s.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "held", Holder: "b", Lease: time.Minute}); fenceview.ErrorCode(err) != fenceview.ELOCKHELD {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(benchenv.CPUTime()-cpu0)/float64(b.N), "cpu-ns/op")
	})
}

// benchGrants acquires and releases 1,024 locks in turn while subs
// subscribers read and release every event.
func benchGrants(b *testing.B, subs int) {
	s := New(nopStore{}, nil, 0, Config{SweepInterval: time.Hour})
	defer s.Close()
	for range subs {
		go readAll(s.Subscribe("", 64))
	}
	ids := make([]string, 1024)
	for i := range ids {
		ids[i] = fmt.Sprintf("lock-%d", i)
	}
	i := 0
	cpu0 := benchenv.CPUTime()
	for b.Loop() {
		id := ids[i%len(ids)]
		i++
		if _, err := s.Acquire(ctx, fenceview.AcquireRequest{ResourceID: id, Holder: "h", Lease: time.Minute}); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Release(ctx, id, "h"); err != nil {
			b.Fatal(err)
		}
	}
	// The process's CPU per grant: steadier than wall time on a shared
	// machine (subscribers' reading included).
	b.ReportMetric(float64(benchenv.CPUTime()-cpu0)/float64(b.N), "cpu-ns/grant")
}

// readAll reads and releases sub's events until it ends.
func readAll(sub fenceview.Subscription) {
	for {
		select {
		case batch := <-sub.Events():
			sub.Release(batch)
		case <-sub.Lost():
			return
		}
	}
}

// What signing costs the issuer: grants/s (acquire + release, durable
// commits on a real SQLite file) at 64 concurrent clients, with and without
// a signer. The goal is under 10% fewer grants/s when signed.
//
//	go test ./issuer -run '^$' -bench GrantSigning -benchtime 5s -count 3
func BenchmarkGrantSigning(b *testing.B) {
	for _, signed := range []bool{false, true} {
		b.Run(fmt.Sprintf("signed=%v/clients=64", signed), func(b *testing.B) {
			ctx := context.Background()
			db := openDB(b)
			cfg := Config{Issuer: "bench", Clock: clock.Real{}, SweepInterval: time.Hour}
			if signed {
				k, err := signing.Open(ctx, db, nil)
				if err != nil {
					b.Fatal(err)
				}
				cfg.Signer = k
			}
			s := New(db, nil, 0, cfg)
			defer s.Close()
			var next atomic.Int64
			b.SetParallelism(32) // 64 goroutines on 2 cores
			cpu0 := benchenv.CPUTime()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				id := next.Add(1)
				holder := fmt.Sprintf("c%d", id)
				for i := 0; pb.Next(); i++ {
					res := fmt.Sprintf("bench-%d", (int(id)*7919+i)%1024)
					g, err := s.Acquire(ctx, fenceview.AcquireRequest{ResourceID: res, Holder: holder, Lease: 30 * time.Second, Wait: 10 * time.Second})
					if err != nil {
						b.Error(err)
						return
					}
					if signed && g.Fencing.Signature == "" {
						b.Error("unsigned grant")
						return
					}
					if _, err := s.Release(ctx, res, holder); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "grants/s")
			// CPU per grant (the process's user+system time): steadier
			// than wall time on a shared machine, and what bounds grants/s
			// once the disk does not.
			b.ReportMetric(float64(benchenv.CPUTime()-cpu0)/float64(b.N), "cpu-ns/grant")
		})
	}
}

// The signing itself, per grant: one Ed25519 signature by the keyring.
func BenchmarkSignGrant(b *testing.B) {
	k, err := signing.Open(context.Background(), memStore{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, _, err := k.Sign("bench-42", 1847, false); err != nil {
			b.Fatal(err)
		}
	}
}

type memStore struct{}

func (memStore) SigningKeys(context.Context) ([]signing.Key, error) { return nil, nil }
func (memStore) AddSigningKey(context.Context, signing.Key) error   { return nil }
func (memStore) RemoveSigningKey(context.Context, string) error     { return nil }

// Grants beside readers: grants per second over FENCEVIEW_BENCH_RESOURCES
// resources (default 750,000), alone and while two viewers limited to one
// tenant's prefix each list in a loop (the first page of /v1/resources,
// a page of the dashboard's table and its totals, over and over). The
// store is a no-op, so what is measured is the service, not the disk.
//
//	go test ./issuer -run '^$' -bench GrantsBesideLists -benchtime 20000x
func BenchmarkGrantsBesideLists(b *testing.B) {
	n := benchenv.Int("FENCEVIEW_BENCH_RESOURCES", 750_000)
	rows := make([]*fenceview.Resource, n)
	for i := range rows {
		rows[i] = &fenceview.Resource{ResourceID: benchID(i), LastToken: 1, Accepted: int64(i % 5)}
	}
	s := New(nopStore{}, rows, 0, Config{SweepInterval: time.Hour})
	defer s.Close()
	rows = nil
	runtime.GC()
	ctx := context.Background()
	for _, listers := range []int{0, 2} {
		b.Run(fmt.Sprintf("listers=%d", listers), func(b *testing.B) {
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var lists atomic.Int64
			for l := range listers {
				prefix := fmt.Sprintf("tenant-%d/", 3+l)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						viewerLists(s, prefix)
						lists.Add(1)
					}
				}()
			}
			b.ResetTimer()
			for i := range b.N {
				id := benchID((i * 7919) % n)
				if _, err := s.Acquire(ctx, fenceview.AcquireRequest{ResourceID: id, Holder: "h", Lease: time.Minute, Wait: 0}); err != nil {
					b.Fatal(err)
				}
				if _, err := s.Release(ctx, id, "h"); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			elapsed := b.Elapsed().Seconds()
			close(stop)
			wg.Wait()
			b.ReportMetric(float64(b.N)/elapsed, "grants/s")
			b.ReportMetric(float64(lists.Load())/elapsed, "lists/s")
		})
	}
}

func benchID(i int) string { return fmt.Sprintf("tenant-%d/orders/%d", i%97, i) }

// viewerLists is what a viewer limited to prefix reads in one round.
func viewerLists(s *Service, prefix string) {
	scope := fenceview.Scope{Prefixes: []string{prefix}, Sees: func(id string) bool { return strings.HasPrefix(id, prefix) }}
	s.ListResources("", "", 100, scope)
	s.SelectResources(fenceview.ResourceQuery{Sort: fenceview.SortID, Limit: 50, Scope: scope})
	s.Totals(scope)
}

type nopStore struct{}

func (nopStore) Apply(context.Context, []*fenceview.Resource, []fenceview.Event) error { return nil }

// A page of the resource list costs a page, not the whole list:
//
//	go test ./issuer -run '^$' -bench fenceview.ResourcePage -benchtime 2000x
func BenchmarkResourcePage(b *testing.B) {
	const n = 1_000_000
	rows := make([]*fenceview.Resource, n)
	for i := range rows {
		rows[i] = &fenceview.Resource{ResourceID: benchID(i), LastToken: 1}
	}
	s := New(nopStore{}, rows, 0, Config{SweepInterval: time.Hour})
	defer s.Close()
	rows = nil
	runtime.GC() // the set-up's garbage is not the page's cost
	b.ResetTimer()
	after := ""
	for i := 0; i < b.N; i++ {
		page, more := s.ListResources("", after, 100, fenceview.Scope{})
		if len(page) != 100 {
			b.Fatalf("page of %d", len(page))
		}
		after = page[99].ResourceID
		if !more {
			after = ""
		}
	}
	b.StopTimer()
}

// Memory of a service holding FENCEVIEW_BENCH_RESOURCES resources (default
// one million) in memory, loaded from SQLite as at start-up.
//
//	go test ./issuer -run '^$' -bench MillionResources -benchtime 1x
func BenchmarkMillionResources(b *testing.B) {
	n := benchenv.Int("FENCEVIEW_BENCH_RESOURCES", 1_000_000)
	ctx := context.Background()
	db := openDB(b)
	now := time.Now()
	for start := 0; start < n; start += 10000 {
		var rows []*fenceview.Resource
		for i := start; i < min(start+10000, n); i++ {
			r := &fenceview.Resource{ResourceID: benchID(i), LastToken: int64(i + 1), HighWaterMark: int64(i)}
			if i%10 == 0 {
				r.Holder, r.HoldCount, r.Token, r.ExpiresAt, r.LeaseMs = "worker-7", 1, r.LastToken, now.Add(time.Hour), 3600000
			}
			rows = append(rows, r)
		}
		if err := db.Apply(ctx, rows, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		t := time.Now()
		loaded, err := db.Resources(ctx)
		if err != nil {
			b.Fatal(err)
		}
		s := New(db, loaded, 0, Config{SweepInterval: time.Hour})
		loadTime := time.Since(t)
		loaded = nil
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "heap-bytes/resource")
		b.ReportMetric(float64(rssBytes())/(1<<20), "rss-MiB")
		b.ReportMetric(loadTime.Seconds(), "load-s")
		if m := s.Metrics(); m.Resources != n {
			b.Fatalf("%d resources loaded, want %d", m.Resources, n)
		}
		s.Close()
	}
}

// rssBytes is the process's resident set size, from /proc (0 elsewhere).
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
