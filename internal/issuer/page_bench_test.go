package issuer

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
)

type nopStore struct{}

func (nopStore) Apply(context.Context, []*fenceview.Resource, []fenceview.Event) error { return nil }

// A page of the resource list costs a page, not the whole list:
//
//	go test ./issuer -run '^$' -bench ListResources -benchtime 2000x
func BenchmarkListResources(b *testing.B) {
	const n = 1_000_000
	rows := make([]*fenceview.Resource, n)
	for i := range rows {
		rows[i] = &fenceview.Resource{ResourceID: fmt.Sprintf("tenant-%d/orders/%d", i%97, i), LastToken: 1}
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
