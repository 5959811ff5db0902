package issuer

import (
	"slices"
	"sync"
	"time"

	"github.com/fenceview/fenceview"
)

// Wait and hold times per lock, for on-call engineers looking for
// contention: how long the recent grants of a lock waited, how long its
// holders kept it.
//
// Only the fenceview.TimedResources most recently active resources are kept, each
// with a fixed ring of its last fenceview.TimedSamples waits and holds: a server
// with a million resources keeps a thousand rings (about a megabyte), not
// a million, and a lock that went quiet is the one whose window nobody
// needs. A resource pushed out starts a new window when it is next granted.

// LockTimes returns the wait and hold times of resourceID's recent grants
// (zero when it has none in the window).
func (s *Service) LockTimes(resourceID string) fenceview.LockTimes {
	return s.metrics.times.get(resourceID)
}

// holdKind is the kind a hold counts under: what the lock is (a
// multi-lock's locks are ordinary locks once granted).
func holdKind(r *fenceview.Resource) fenceview.Kind {
	if r.Election {
		return fenceview.KindElection
	}
	if _, _, ok := fenceview.ParseSlotID(r.ResourceID); ok {
		return fenceview.KindPermit
	}
	return fenceview.KindLock
}

// timedSample is one wait (a grant) or hold (a release or expiry) a batch
// saw; they are recorded once the batch is durable (holdTimes.add).
type timedSample struct {
	id   string
	d    time.Duration
	hold bool
	kind fenceview.Kind
}

// timeGrant notes a grant of w's lock and its wait: from a waiter's
// arrival (g.since), 0 for a grant at once.
func (b *batch) timeGrant(w *state, g grantReq) {
	var d time.Duration
	if !g.since.IsZero() {
		d = max(b.now.Sub(g.since), 0)
	}
	b.timed = append(b.timed, timedSample{id: w.res.ResourceID, d: d, kind: g.kind})
}

// timeFree notes the end of w's hold, before the lock is freed: from its
// grant to now, or to the lease's end for a lease that ran out (its holder
// lost it then, whenever the expiry was recorded).
func (b *batch) timeFree(w *state) {
	r := &w.res
	if r.Holder == "" || r.GrantedAt.IsZero() {
		return
	}
	end := b.now
	if r.ExpiresAt.Before(end) {
		end = r.ExpiresAt
	}
	b.timed = append(b.timed, timedSample{id: r.ResourceID, d: max(end.Sub(r.GrantedAt), 0), hold: true, kind: holdKind(r)})
}

// holdTimes is the windows of the most recently active resources, in an
// intrusive list from the most (head) to the least recently active, and
// the aggregate histograms per kind.
type holdTimes struct {
	mu         sync.Mutex
	byID       map[string]*timedResource
	head, tail *timedResource
	limit      int // fenceview.TimedResources; smaller in tests
	hist       [kinds][2]fenceview.Histogram
}

type timedResource struct {
	id           string
	waits, holds ring
	prev, next   *timedResource
}

// ring is the last fenceview.TimedSamples durations; n counts every one added.
type ring struct {
	d [fenceview.TimedSamples]time.Duration
	n int64
}

func (r *ring) add(d time.Duration) {
	r.d[r.n%fenceview.TimedSamples] = d
	r.n++
}

func (r *ring) stats() fenceview.DurationStats {
	n := int(min(r.n, fenceview.TimedSamples))
	if n == 0 {
		return fenceview.DurationStats{}
	}
	s := make([]time.Duration, n)
	copy(s, r.d[:n])
	slices.Sort(s)
	return fenceview.DurationStats{Count: n, Total: r.n, P50: rank(s, 50), P99: rank(s, 99), Max: s[n-1]}
}

// rank is the nearest-rank percentile p of sorted s: the smallest sample
// with at least p% of the samples at or below it.
func rank(s []time.Duration, p int) time.Duration {
	i := (len(s)*p + 99) / 100 // ceil(len*p/100)
	return s[max(i, 1)-1]
}

func newHoldTimes(limit int) *holdTimes {
	return &holdTimes{byID: make(map[string]*timedResource, limit), limit: limit}
}

// add records a durable batch's samples.
func (h *holdTimes) add(samples []timedSample) {
	if len(samples) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range samples {
		t := h.touch(s.id)
		if s.hold {
			t.holds.add(s.d)
		} else {
			t.waits.add(s.d)
		}
		h.hist[s.kind][b2i(s.hold)].Observe(s.d)
	}
}

// touch returns id's window, moved to the head; a new one takes the
// place of the least recently active when the list is full.
func (h *holdTimes) touch(id string) *timedResource {
	t := h.byID[id]
	switch {
	case t != nil:
		h.unlink(t)
	case len(h.byID) < h.limit:
		t = &timedResource{id: id}
		h.byID[id] = t
	default:
		t = h.tail
		h.unlink(t)
		delete(h.byID, t.id)
		*t = timedResource{id: id}
		h.byID[id] = t
	}
	t.next = h.head
	if h.head != nil {
		h.head.prev = t
	}
	h.head = t
	if h.tail == nil {
		h.tail = t
	}
	return t
}

func (h *holdTimes) unlink(t *timedResource) {
	if t.prev != nil {
		t.prev.next = t.next
	} else {
		h.head = t.next
	}
	if t.next != nil {
		t.next.prev = t.prev
	} else {
		h.tail = t.prev
	}
	t.prev, t.next = nil, nil
}

func (h *holdTimes) get(id string) fenceview.LockTimes {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.byID[id]
	if t == nil {
		return fenceview.LockTimes{}
	}
	return fenceview.LockTimes{Waits: t.waits.stats(), Holds: t.holds.stats()}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// LockTimeHistograms returns the aggregate wait and hold histograms, one
// per kind, since the service started. Waits count by what was asked for
// (a multi-lock's under multi), holds by what the lock is (lock,
// semaphore or election).
func (s *Service) LockTimeHistograms() []fenceview.LockTimeHistograms {
	h := s.metrics.times
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]fenceview.LockTimeHistograms, kinds)
	for k := range out {
		out[k] = fenceview.LockTimeHistograms{Kind: fenceview.Kind(k).String(), Waits: h.hist[k][0], Holds: h.hist[k][1]}
	}
	return out
}
