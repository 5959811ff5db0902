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
)

// Grants beside readers: grants per second over FENCEVIEW_BENCH_RESOURCES
// resources (default 750,000), alone and while two viewers limited to one
// tenant's prefix each list in a loop (the first page of /v1/resources,
// a page of the dashboard's table and its totals, over and over). The
// store is a no-op, so what is measured is the service, not the disk.
//
//	go test ./issuer -run '^$' -bench GrantsBesideLists -benchtime 20000x
func BenchmarkGrantsBesideLists(b *testing.B) {
	n := 750_000
	if v := os.Getenv("FENCEVIEW_BENCH_RESOURCES"); v != "" {
		n, _ = strconv.Atoi(v)
	}
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
