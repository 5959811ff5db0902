package issuer

import (
	"sort"
	"strings"
	"sync/atomic"

	"github.com/google/btree"

	"github.com/fenceview/fenceview"
)

// known is a resource the service knows. Its value is never changed in
// place: a change stores a new one (applyLocked, rollbackLocked), so a
// reader loads it without s.mu and holds a consistent copy of that
// resource, however many grants follow.
//
// res is the latest value, which the next change builds on; durable is the
// value as of the last commit that included the resource, nil until the
// first. Readers read durable: a change applied in memory whose commit
// then fails (or whose process dies, or whose cluster leader is deposed)
// is never seen, so every read is of a state that was, or will be after a
// restart, the record.
type known struct {
	id      string
	res     atomic.Pointer[fenceview.Resource]
	durable atomic.Pointer[fenceview.Resource]
	waiters []*waiter // first come, first served; under s.mu
}

func newKnown(r fenceview.Resource) *known {
	k := &known{id: r.ResourceID}
	k.res.Store(&r)
	k.durable.Store(&r)
	return k
}

// read is the resource as readers see it: its durable value, nil when no
// commit has included it yet.
func (k *known) read() *fenceview.Resource { return k.durable.Load() }

func byID(a, b *known) bool { return a.id < b.id }

func newIndex() *btree.BTreeG[*known] { return btree.NewG(32, byID) }

// snapshot returns the index of every known resource as it is now, and the
// index of those with a counter alarm, for reading without s.mu. Cloning
// a B-tree is O(1): the clone and the index share their nodes, and the
// next insert into the index copies the few nodes it touches instead of
// changing them. So readers walk, sort and count at their own pace, and
// no grant ever waits for a list.
func (s *Service) snapshot() (all, alarmed *btree.BTreeG[*known]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.index.Clone(), s.alarmIndex.Clone()
}

// Scope is what a reader may see. Sees, when set, decides each id (nil:
// every id). Prefixes, when not empty, are id prefixes outside of which
// Sees accepts nothing (a key's resource prefixes): readers then walk only
// those ranges of the index, so a key limited to a few prefixes pays for
// what it may see, not for every resource. A prefix missing from the list
// can only hide a resource, never show one Sees refuses.
type Scope struct {
	Prefixes []string
	Sees     func(resourceID string) bool
}

func (sc Scope) sees(id string) bool { return sc.Sees == nil || sc.Sees(id) }

// ranges are the id prefixes a walk for ids starting with prefix covers
// within sc: sorted, none starting with another, so that their ranges of
// the index are disjoint and come in id order.
func (sc Scope) ranges(prefix string) []string {
	if len(sc.Prefixes) == 0 {
		return []string{prefix}
	}
	var out []string
	for _, p := range sc.Prefixes {
		switch {
		case strings.HasPrefix(prefix, p):
			out = append(out, prefix)
		case strings.HasPrefix(p, prefix):
			out = append(out, p)
		}
	}
	sort.Strings(out)
	kept := out[:0]
	for _, p := range out {
		// Sorted, a prefix comes just before every id that starts with it.
		if len(kept) > 0 && strings.HasPrefix(p, kept[len(kept)-1]) {
			continue
		}
		kept = append(kept, p)
	}
	return kept
}

// walk calls fn, in id order, for each resource of index whose id starts
// with one of ranges (as Scope.ranges gives them) and is at or after from,
// until fn returns false. It visits nothing outside the ranges.
func walk(index *btree.BTreeG[*known], ranges []string, from string, fn func(*known) bool) {
	for _, p := range ranges {
		more := true
		index.AscendGreaterOrEqual(&known{id: max(p, from)}, func(k *known) bool {
			if !strings.HasPrefix(k.id, p) {
				return false
			}
			more = fn(k)
			return more
		})
		if !more {
			return
		}
	}
}
