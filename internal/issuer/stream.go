package issuer

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/fenceview/fenceview"
)

// MaxBacklog bounds what one subscriber may hold delivered and not yet
// Released, in bytes (an estimate of the events' memory, eventBytes): a
// slow reader pins at most this much of the history in memory, whatever
// the size of the commits. One batch is always delivered to a subscriber
// holding nothing, however large.
const MaxBacklog = 1 << 20

// Subscription receives committed events as they happen, in batches: all
// the events of one group commit that match arrive together, so a watcher
// wakes once per commit, not once per event. A subscriber that falls behind
// by more than its buffer of batches, or by more than MaxBacklog bytes not
// yet Released, is dropped (Lost is closed): a slow reader must never stall
// a grant, and never holds more than its bound. It can resume from the
// durable history (the event stream's ?since=).
type Subscription struct {
	ResourceID string // "" for every resource
	start      int64  // see Start
	events     chan []*fenceview.Published
	lost       chan struct{}
	backlog    atomic.Int64 // bytes delivered and not yet released
	pending    pending      // the hub's queue for it
}

// Start is the sequence number of the last event handed out before the
// subscription began: every later event is delivered on Events, every
// earlier one is in the durable history.
func (sub *Subscription) Start() int64 { return sub.start }

// Release tells the subscription a batch received from Events is done
// with, so its bytes leave the backlog. A reader that never releases is
// dropped once MaxBacklog bytes have been delivered to it.
func (sub *Subscription) Release(batch []*fenceview.Published) {
	sub.backlog.Add(-batchBytes(batch))
}

// Backlog is the bytes delivered to sub and not yet released.
func (sub *Subscription) Backlog() int64 { return sub.backlog.Load() }

// eventBytes estimates the memory one published event holds: the struct
// with its strings, and its encoding, about the strings again.
func eventBytes(p *fenceview.Published) int64 {
	e := &p.Event
	return 256 + 2*int64(len(e.Type)+len(e.ResourceID)+len(e.Holder)+len(e.Source)+len(e.Reason))
}

func batchBytes(batch []*fenceview.Published) int64 {
	var n int64
	for _, p := range batch {
		n += eventBytes(p)
	}
	return n
}

// Events delivers batches of events, in sequence order.
func (sub *Subscription) Events() <-chan []*fenceview.Published { return sub.events }

// Lost is closed when the subscription was dropped for falling behind or
// because the service closed.
func (sub *Subscription) Lost() <-chan struct{} { return sub.lost }

// Subscribe starts a subscription to events of resourceID ("" for all).
func (s *Service) Subscribe(resourceID string, buffer int) fenceview.Subscription {
	if buffer < 1 {
		buffer = 1
	}
	sub := &Subscription{ResourceID: resourceID, events: make(chan []*fenceview.Published, buffer), lost: make(chan struct{})}
	s.hub.subscribe(sub)
	return sub
}

// Unsubscribe ends a subscription.
func (s *Service) Unsubscribe(sub fenceview.Subscription) {
	if mine, ok := sub.(*Subscription); ok {
		s.hub.unsubscribe(mine)
	}
}

// hub hands committed events to subscribers, in the shape of gorilla's
// chat hub: it owns the subscriber set, each subscriber has a bounded
// buffer (Events), and one that cannot take a batch is dropped rather than
// waited for. It runs under its own lock, never the service's: the
// committer plans each commit's delivery (plan, in commit order, before
// the next commit may start) and delivers it (deliver) after releasing
// s.mu, before answering the commit's callers, so a change is on every
// subscription when it is answered.
type hub struct {
	mu      sync.Mutex
	subs    map[*Subscription]struct{}
	planned int64 // the last event planned for delivery: a new subscription's Start
	closed  bool
	dropped *atomic.Int64 // the service's count of subscribers dropped

	// deliverHook, when set by tests, runs before each delivery to a
	// subscriber, holding only that subscriber's delivery lock.
	deliverHook func(*Subscription)
}

// pending is a subscriber's batches planned and not yet delivered, in
// commit order. deliver drains it under sub.delivering, so one goroutine
// at a time delivers to a subscriber, in order, whichever commit planned
// them.
type pending struct {
	queue      [][]*fenceview.Published // guarded by hub.mu
	delivering sync.Mutex
}

// init readies h for a service whose last event is lastSeq.
func (h *hub) init(lastSeq int64, dropped *atomic.Int64) {
	h.subs, h.planned, h.dropped = make(map[*Subscription]struct{}), lastSeq, dropped
}

func (h *hub) subscribe(sub *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	sub.start = h.planned
	if h.closed {
		close(sub.lost)
		return
	}
	h.subs[sub] = struct{}{}
}

func (h *hub) unsubscribe(sub *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, sub)
	sub.pending.queue = nil
}

// count is the number of subscribers.
func (h *hub) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// dropLocked ends sub as fallen behind (or closed). h.mu must be held.
func (h *hub) dropLocked(sub *Subscription) {
	if _, ok := h.subs[sub]; ok {
		delete(h.subs, sub)
		sub.pending.queue = nil
		close(sub.lost)
		h.dropped.Add(1)
	}
}

func (h *hub) drop(sub *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dropLocked(sub)
}

// close drops every subscriber; later ones are lost at once.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for sub := range h.subs {
		h.dropLocked(sub)
	}
}

// plan queues a commit's events for every subscriber that wants them, as
// one batch per subscriber, and returns those subscribers, for deliver.
// Commits call it one at a time, in commit order.
func (h *hub) plan(events []fenceview.Event) (targets []*Subscription) {
	if len(events) == 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.planned = events[len(events)-1].Seq
	if len(h.subs) == 0 {
		return nil
	}
	all := make([]*fenceview.Published, len(events))
	now := time.Now()
	for i, e := range events {
		all[i] = &fenceview.Published{Event: e, PublishedAt: now}
	}
	for sub := range h.subs {
		batch := all
		if sub.ResourceID != "" {
			batch = nil
			for _, p := range all {
				if p.ResourceID == sub.ResourceID {
					batch = append(batch, p)
				}
			}
			if len(batch) == 0 {
				continue
			}
		}
		sub.pending.queue = append(sub.pending.queue, batch)
		targets = append(targets, sub)
	}
	return targets
}

// deliver hands each of targets its planned batches, without blocking,
// and returns once they are on its Events (or it was dropped). Batches a
// later commit planned meanwhile may go with them, in order: that
// commit's deliver then finds them delivered.
func (h *hub) deliver(targets []*Subscription) {
	for _, sub := range targets {
		sub.pending.delivering.Lock()
		for {
			h.mu.Lock()
			q := sub.pending.queue
			if len(q) == 0 {
				h.mu.Unlock()
				break
			}
			batch := q[0]
			q[0] = nil
			sub.pending.queue = q[1:]
			h.mu.Unlock()
			h.send(sub, batch)
		}
		sub.pending.delivering.Unlock()
	}
}

// send puts batch on sub's Events, or drops sub: its buffer is full, or
// it holds MaxBacklog bytes not yet released.
func (h *hub) send(sub *Subscription, batch []*fenceview.Published) {
	if h.deliverHook != nil {
		h.deliverHook(sub)
	}
	size := batchBytes(batch)
	if held := sub.backlog.Load(); held > 0 && held+size > MaxBacklog {
		h.drop(sub)
		return
	}
	sub.backlog.Add(size)
	select {
	case sub.events <- batch:
	default:
		h.drop(sub)
	}
}
