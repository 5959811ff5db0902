package issuer

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/benchenv"
	"github.com/fenceview/fenceview/internal/sqlite"
)

// Memory of a service holding FENCEVIEW_BENCH_RESOURCES resources (default
// one million) in memory, loaded from SQLite as at start-up.
//
//	go test ./issuer -run '^$' -bench MillionResources -benchtime 1x
func BenchmarkMillionResources(b *testing.B) {
	n := benchenv.Int("FENCEVIEW_BENCH_RESOURCES", 1_000_000)
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "m.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
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
