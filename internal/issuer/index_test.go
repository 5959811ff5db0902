package issuer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
)

// prefixScope is a key limited to prefixes, as auth.Principal reads it,
// counting every id the readers ask it about: each is an entry visited.
func prefixScope(visited *int, prefixes ...string) fenceview.Scope {
	return fenceview.Scope{Prefixes: prefixes, Sees: func(id string) bool {
		*visited++
		for _, p := range prefixes {
			if strings.HasPrefix(id, p) {
				return true
			}
		}
		return false
	}}
}

func tenantService(t *testing.T, tenants, each int) *Service {
	t.Helper()
	var rows []*fenceview.Resource
	for i := range tenants * each {
		rows = append(rows, &fenceview.Resource{ResourceID: fmt.Sprintf("tenant-%02d/r-%04d", i%tenants, i), LastToken: 1,
			Accepted: 1, CounterAlarm: int64(i / tenants % 2)})
	}
	s := New(noStore{}, rows, 0, Config{SweepInterval: time.Hour})
	t.Cleanup(s.Close)
	return s
}

// A viewer limited to one tenant's prefix pays for that tenant: its page
// visits a page of entries, its totals, table and alarms the tenant's
// resources, never the other 99 tenants'.
func TestPrefixLimitedReadersVisitTheirOwnResources(t *testing.T) {
	s := tenantService(t, 100, 100) // 10,000 resources, 100 a tenant
	var visited int
	scope := prefixScope(&visited, "tenant-42/")

	page, more := s.ListResources("", "", 10, scope)
	if len(page) != 10 || !more || page[0].ResourceID != "tenant-42/r-0042" {
		t.Fatalf("first page: %d resources, more=%v, first %v", len(page), more, page)
	}
	if visited > 11 {
		t.Errorf("a page of 10 visited %d entries, want at most 11", visited)
	}
	visited = 0
	page, _ = s.ListResources("", page[9].ResourceID, 10, scope)
	if len(page) != 10 || visited > 12 {
		t.Errorf("the second page: %d resources, %d entries visited, want 10 and at most 12", len(page), visited)
	}

	visited = 0
	if n, _, accepted, _ := s.Totals(scope); n != 100 || accepted != 100 || visited != 100 {
		t.Errorf("totals: %d resources, %d accepted, %d entries visited; want 100, 100, 100", n, accepted, visited)
	}
	visited = 0
	if p := s.SelectResources(fenceview.ResourceQuery{Sort: fenceview.SortRejected, Desc: true, Limit: 5, Scope: scope}); p.Matched != 100 || visited != 100 {
		t.Errorf("a table page: %d matched, %d entries visited; want 100, 100", p.Matched, visited)
	}
	visited = 0
	if _, n := s.Alarmed(3, scope); n != 50 || visited != 50 {
		t.Errorf("alarms: %d, %d entries visited; want 50, 50", n, visited)
	}
	// A query prefix inside the key's narrows the walk further.
	visited = 0
	if p := s.SelectResources(fenceview.ResourceQuery{Prefix: "tenant-42/r-00", Limit: 5, Scope: scope}); p.Matched != 1 || visited != 1 {
		t.Errorf("a table page under tenant-42/r-00: %d matched, %d visited; want 1, 1", p.Matched, visited)
	}
}

// Readers never hold the service's lock while they walk: from inside a
// walk (the scope's callback, mid-scan) the lock is free, and grants on
// another goroutine, new resources included, go through before the walk
// goes on. The walk reads the snapshot it started from.
func TestGrantsProceedWhileAListIsMidScan(t *testing.T) {
	ctx := context.Background()
	readers := map[string]func(s *Service, sc fenceview.Scope) int{
		"ListResources": func(s *Service, sc fenceview.Scope) int { p, _ := s.ListResources("", "", 1000, sc); return len(p) },
		"SelectResources": func(s *Service, sc fenceview.Scope) int {
			return len(s.SelectResources(fenceview.ResourceQuery{Sort: fenceview.SortAccepted, Limit: 1000, Scope: sc}).Resources)
		},
		"Totals":  func(s *Service, sc fenceview.Scope) int { n, _, _, _ := s.Totals(sc); return n },
		"Alarmed": func(s *Service, sc fenceview.Scope) int { _, n := s.Alarmed(1000, sc); return n },
	}
	for name, read := range readers {
		t.Run(name, func(t *testing.T) {
			s := tenantService(t, 4, 50)
			before := len(s.Resources())
			alarmedBefore, _ := s.Alarmed(1000, fenceview.Scope{})
			mid := 0
			granted := 0
			sees := func(id string) bool {
				mid++
				if mid != 2 { // once, mid-scan
					return true
				}
				if !s.mu.TryLock() {
					t.Errorf("%s holds the service's lock while it walks", name)
					return true
				}
				s.mu.Unlock()
				done := make(chan error)
				go func() {
					for i := range 20 {
						if _, err := s.Acquire(ctx, fenceview.AcquireRequest{ResourceID: fmt.Sprintf("tenant-00/new-%d", i), Holder: "h", Lease: time.Minute, Wait: 0}); err != nil {
							done <- err
							return
						}
						if _, err := s.Acquire(ctx, fenceview.AcquireRequest{ResourceID: id, Holder: fmt.Sprintf("h%d", i), Lease: time.Minute, Wait: 0}); err == nil {
							s.Release(ctx, id, fmt.Sprintf("h%d", i))
						}
					}
					done <- nil
				}()
				if err := <-done; err != nil {
					t.Error(err)
				}
				granted = 20
				return true
			}
			n := read(s, fenceview.Scope{Sees: sees})
			if granted != 20 {
				t.Fatalf("the grants did not run mid-scan (callback ran %d times)", mid)
			}
			want := before
			if name == "Alarmed" {
				want = len(alarmedBefore)
			}
			if n != want {
				t.Errorf("%s read %d resources, want %d: the snapshot it started from", name, n, want)
			}
			if got := len(s.Resources()); got != before+20 {
				t.Errorf("after the walk, %d resources, want %d", got, before+20)
			}
		})
	}
}

// Scopes walk exactly what filtering every resource would give, whatever
// the prefixes: nested, overlapping, outside the query's prefix or inside it.
func TestScopeWalksWhatAFilterWould(t *testing.T) {
	s := tenantService(t, 12, 10)
	all := s.Resources()
	cases := []struct {
		prefix   string
		prefixes []string
	}{
		{"", nil}, {"", []string{"tenant-1"}}, {"", []string{"tenant-1", "tenant-10/", "tenant-11/r-0011"}},
		{"tenant-1", []string{"tenant-10/", "tenant-0"}}, {"tenant-10/", []string{"tenant-1"}},
		{"tenant-03/", []string{"tenant-04/"}}, {"", []string{"nothing/"}}, {"", []string{""}},
		{"tenant-0", []string{"tenant-05/", "tenant-05/", "tenant-02/r-0"}},
	}
	for _, c := range cases {
		var visited int
		scope := prefixScope(&visited, c.prefixes...)
		if len(c.prefixes) == 0 {
			scope = fenceview.Scope{}
		}
		var want []string
		for _, r := range all {
			if strings.HasPrefix(r.ResourceID, c.prefix) && scope.Contains(r.ResourceID) {
				want = append(want, r.ResourceID)
			}
		}
		var got []string
		for after := ""; ; {
			page, more := s.ListResources(c.prefix, after, 7, scope)
			for _, r := range page {
				got = append(got, r.ResourceID)
			}
			if !more {
				break
			}
			after = page[len(page)-1].ResourceID
		}
		if !slices.Equal(got, want) {
			t.Errorf("prefix %q within %q: pages give %v, a filter %v", c.prefix, c.prefixes, got, want)
		}
		if p := s.SelectResources(fenceview.ResourceQuery{Prefix: c.prefix, Limit: 1000, Scope: scope}); p.Matched != len(want) {
			t.Errorf("prefix %q within %q: SelectResources matched %d, want %d", c.prefix, c.prefixes, p.Matched, len(want))
		}
	}
}
