package issuer

import (
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

// Subscription is the issuer's fenceview.Subscription. A subscriber that
// falls behind by more than its buffer of batches, or by more than
// MaxBacklog bytes not yet Released, is dropped (Lost is closed): a slow
// reader must never stall a grant, and never holds more than its bound.
type Subscription struct {
	ResourceID string // "" for every resource
	start      int64
	events     chan []*fenceview.Published
	lost       chan struct{}
	backlog    atomic.Int64 // bytes delivered and not yet released
}

// Start is the sequence number of the last event committed before the
// subscription began; every later event is delivered on Events.
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
	s.mu.Lock()
	defer s.mu.Unlock()
	sub.start = s.published
	if s.closed {
		close(sub.lost)
		return sub
	}
	s.subs[sub] = struct{}{}
	return sub
}

// Unsubscribe ends a subscription Subscribe returned.
func (s *Service) Unsubscribe(sub fenceview.Subscription) {
	mine, _ := sub.(*Subscription)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.subs, mine)
}

func (s *Service) dropLocked(sub *Subscription) {
	if _, ok := s.subs[sub]; ok {
		delete(s.subs, sub)
		close(sub.lost)
		s.metrics.streamDropped.Add(1)
	}
}

// publishLocked hands events to every subscriber, without blocking, as one
// batch per subscriber.
func (s *Service) publishLocked(events []fenceview.Event) {
	if len(s.subs) == 0 || len(events) == 0 {
		return
	}
	all := make([]*fenceview.Published, len(events))
	now := time.Now()
	for i, e := range events {
		all[i] = &fenceview.Published{Event: e, PublishedAt: now}
	}
	for sub := range s.subs {
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
		size := batchBytes(batch)
		if held := sub.backlog.Load(); held > 0 && held+size > MaxBacklog {
			s.dropLocked(sub)
			continue
		}
		sub.backlog.Add(size)
		select {
		case sub.events <- batch:
		default:
			s.dropLocked(sub)
		}
	}
}
