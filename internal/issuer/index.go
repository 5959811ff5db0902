package issuer

import (
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

// walk calls fn, in id order, for each resource of index whose id starts
// with one of ranges (as fenceview.Scope.Ranges gives them) and is at or after from,
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
