package issuer

import (
	"container/heap"
	"slices"
	"strings"
	"time"

	"github.com/fenceview/fenceview"
)

// SelectResources answers a fenceview.ResourceQuery in one pass over a snapshot of
// the resources the query's prefix and scope allow, outside the service's
// lock, keeping only the page in a heap: memory is the page's, time linear
// in the resources walked (see BenchmarkSelectResources), whatever the
// page's depth.
func (s *Service) SelectResources(q fenceview.ResourceQuery) fenceview.ResourcePage {
	if q.Limit < 1 {
		q.Limit = 50
	}
	keyOf := sortKey(q.Sort)
	less := func(a, b fenceview.ResourceKey) bool {
		c := compareKeys(a, b)
		if q.Desc {
			return c > 0
		}
		return c < 0
	}
	// A max-heap (in the page's order) of the best Limit+1 seen so far:
	// the extra one says whether a next page exists.
	h := &pageHeap{less: less}
	var page fenceview.ResourcePage
	index, _ := s.snapshot()
	now := s.clock.Now()
	walk(index, q.Scope.Ranges(q.Prefix), "", func(kn *known) bool {
		r := kn.read()
		if r == nil || !q.Scope.Contains(kn.id) || (q.Where != nil && !q.Where(r)) {
			return true
		}
		page.Matched++
		k := keyOf(r, now)
		if q.After != nil && !less(*q.After, k) {
			return true
		}
		if h.Len() <= q.Limit {
			heap.Push(h, entry{key: k, r: r})
		} else if less(k, h.items[0].key) {
			h.items[0] = entry{key: k, r: r}
			heap.Fix(h, 0)
		}
		return true
	})
	items := h.items
	for i := range items {
		items[i].res = viewAt(items[i].r, now)
	}
	slices.SortFunc(items, func(a, b entry) int {
		if less(a.key, b.key) {
			return -1
		}
		return 1
	})
	if len(items) > q.Limit {
		items = items[:q.Limit]
		k := items[len(items)-1].key
		page.Next = &k
	}
	for _, e := range items {
		page.Resources = append(page.Resources, e.res)
	}
	return page
}

// viewAt is a resource as readers see it at now: an expired lease shows
// no holder.
func viewAt(res *fenceview.Resource, now time.Time) fenceview.Resource {
	r := *res
	if sharedHeld(&r) {
		// Each reader's lease its own: those live, the first of them
		// mirrored, as the sweep will leave it.
		live := make([]fenceview.Hold, 0, len(r.Readers))
		for _, h := range r.Readers {
			if h.ExpiresAt.After(now) {
				live = append(live, h)
			}
		}
		token := r.Token
		r.Readers = live
		summarize(&r)
		if len(live) > 0 {
			r.Token = token
		}
		return r
	}
	if r.Holder != "" && !r.ExpiresAt.After(now) {
		r.Holder, r.HoldCount, r.Token, r.ExpiresAt = "", 0, 0, time.Time{}
	}
	return r
}

// sortKey returns the key function of an order. It reads the resource in
// place (no copy per resource: a scan touches every one).
func sortKey(sort string) func(*fenceview.Resource, time.Time) fenceview.ResourceKey {
	if num, ok := sortNums[sort]; ok {
		return func(r *fenceview.Resource, now time.Time) fenceview.ResourceKey {
			return fenceview.ResourceKey{Num: num(r), ID: r.ResourceID}
		}
	}
	if sort == fenceview.SortHolder {
		return func(r *fenceview.Resource, now time.Time) fenceview.ResourceKey {
			if r.Holder == "" || !r.ExpiresAt.After(now) {
				return fenceview.ResourceKey{ID: r.ResourceID}
			}
			return fenceview.ResourceKey{Str: r.Holder, ID: r.ResourceID}
		}
	}
	return func(r *fenceview.Resource, now time.Time) fenceview.ResourceKey {
		return fenceview.ResourceKey{ID: r.ResourceID}
	}
}

// sortNums are the orders by a number of the resource, ties broken by id.
var sortNums = map[string]func(*fenceview.Resource) int64{
	fenceview.SortHWM:       func(r *fenceview.Resource) int64 { return r.HighWaterMark },
	fenceview.SortLastToken: func(r *fenceview.Resource) int64 { return r.LastToken },
	fenceview.SortAccepted:  func(r *fenceview.Resource) int64 { return r.Accepted },
	fenceview.SortRejected:  func(r *fenceview.Resource) int64 { return r.Rejected },
	fenceview.SortLastRefused: func(r *fenceview.Resource) int64 {
		if r.LastRejectionAt.IsZero() {
			return 0
		}
		return r.LastRejectionAt.UnixMilli()
	},
}

func compareKeys(a, b fenceview.ResourceKey) int {
	switch {
	case a.Num != b.Num:
		if a.Num < b.Num {
			return -1
		}
		return 1
	case a.Str != b.Str:
		return strings.Compare(a.Str, b.Str)
	}
	return strings.Compare(a.ID, b.ID)
}

type entry struct {
	key fenceview.ResourceKey
	r   *fenceview.Resource // the snapshot's copy, never changed
	res fenceview.Resource
}

// pageHeap keeps the worst entry of the page on top, to be replaced.
type pageHeap struct {
	items []entry
	less  func(a, b fenceview.ResourceKey) bool
}

func (h *pageHeap) Len() int           { return len(h.items) }
func (h *pageHeap) Less(i, j int) bool { return h.less(h.items[j].key, h.items[i].key) }
func (h *pageHeap) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *pageHeap) Push(x any)         { h.items = append(h.items, x.(entry)) }
func (h *pageHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}
