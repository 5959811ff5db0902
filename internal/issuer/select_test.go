package issuer

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/benchenv"
)

type noStore struct{}

func (noStore) Apply(context.Context, []*fenceview.Resource, []fenceview.Event) error { return nil }

func selectService(tb testing.TB, n int) *Service {
	tb.Helper()
	var rows []*fenceview.Resource
	for i := range n {
		rows = append(rows, &fenceview.Resource{
			ResourceID: fmt.Sprintf("tenant-%d/orders/%06d", i%7, i), LastToken: int64(i % 13), HighWaterMark: int64(i % 13),
			Rejected: int64(i % 5), Accepted: int64(i),
		})
	}
	s := New(noStore{}, rows, 0, Config{SweepInterval: time.Hour})
	tb.Cleanup(s.Close)
	return s
}

// TestSelectResourcesPagesLikeASort walks every page of several orders and
// compares with sorting everything.
func TestSelectResourcesPagesLikeASort(t *testing.T) {
	s := selectService(t, 500)
	for _, sort := range fenceview.SortKeys {
		for _, desc := range []bool{false, true} {
			for _, prefix := range []string{"", "tenant-3/", "nothing"} {
				var want []string
				keyOf := sortKey(sort)
				all := s.Resources()
				slices.SortFunc(all, func(a, b fenceview.Resource) int {
					c := compareKeys(keyOf(&a, time.Now()), keyOf(&b, time.Now()))
					if desc {
						c = -c
					}
					return c
				})
				for _, r := range all {
					if len(r.ResourceID) >= len(prefix) && r.ResourceID[:len(prefix)] == prefix {
						want = append(want, r.ResourceID)
					}
				}
				var got []string
				q := fenceview.ResourceQuery{Prefix: prefix, Sort: sort, Desc: desc, Limit: 17}
				for pages := 0; ; pages++ {
					p := s.SelectResources(q)
					if p.Matched != len(want) {
						t.Fatalf("%s desc=%v %q: matched %d, want %d", sort, desc, prefix, p.Matched, len(want))
					}
					for _, r := range p.Resources {
						got = append(got, r.ResourceID)
					}
					if p.Next == nil {
						break
					}
					if len(p.Resources) != 17 || pages > 100 {
						t.Fatalf("%s: a page of %d with a next", sort, len(p.Resources))
					}
					q.After = p.Next
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s desc=%v %q: pages give %d ids, a sort %d; first %v vs %v", sort, desc, prefix, len(got), len(want), head(got), head(want))
				}
			}
		}
	}
}

func head(s []string) []string { return s[:min(len(s), 5)] }

// BenchmarkSelectResources is one page of the dashboard's table over
// FENCEVIEW_BENCH_RESOURCES resources (default one million).
//
//	go test ./issuer -run '^$' -bench SelectResources -benchtime 20x
func BenchmarkSelectResources(b *testing.B) {
	n := benchenv.Int("FENCEVIEW_BENCH_RESOURCES", 1_000_000)
	s := selectService(b, n)
	for _, c := range []struct {
		name string
		q    fenceview.ResourceQuery
	}{
		{"id", fenceview.ResourceQuery{Sort: fenceview.SortID, Limit: 50}},
		{"rejected-desc", fenceview.ResourceQuery{Sort: fenceview.SortRejected, Desc: true, Limit: 50}},
		{"prefix", fenceview.ResourceQuery{Prefix: "tenant-3/orders/0001", Sort: fenceview.SortID, Limit: 50}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				if p := s.SelectResources(c.q); len(p.Resources) == 0 {
					b.Fatal("empty page")
				}
			}
		})
	}
}
