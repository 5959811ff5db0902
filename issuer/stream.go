package issuer

import (
	"sync"
	"time"

	"github.com/fenceview/fenceview"
)

// Published is an event as subscribers receive it. Every subscriber gets
// the same *Published, so an encoding made once (Encoded) serves them all.
type Published struct {
	fenceview.Event
	// PublishedAt is when the event's commit was published (wall clock,
	// monotonic): how long it then waits for a client is the stream's lag.
	PublishedAt time.Time
	once        sync.Once
	wire        []byte
}

// Encoded returns encode(p.Event), computed by the first caller only.
func (p *Published) Encoded(encode func(fenceview.Event) []byte) []byte {
	p.once.Do(func() { p.wire = encode(p.Event) })
	return p.wire
}

// Subscription receives committed events as they happen, in batches: all
// the events of one group commit that match arrive together, so a watcher
// wakes once per commit, not once per event. A subscriber that falls behind
// by more than its buffer of batches is dropped (Lost is closed): a slow
// reader must never stall a grant.
type Subscription struct {
	ResourceID string // "" for every resource
	// Start is the sequence number of the last event committed before the
	// subscription began; every later event is delivered on Events.
	Start  int64
	events chan []*Published
	lost   chan struct{}
}

// Events delivers batches of events, in sequence order.
func (sub *Subscription) Events() <-chan []*Published { return sub.events }

// Lost is closed when the subscription was dropped for falling behind or
// because the service closed.
func (sub *Subscription) Lost() <-chan struct{} { return sub.lost }

// Subscribe starts a subscription to events of resourceID ("" for all).
func (s *Service) Subscribe(resourceID string, buffer int) *Subscription {
	if buffer < 1 {
		buffer = 1
	}
	sub := &Subscription{ResourceID: resourceID, events: make(chan []*Published, buffer), lost: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	sub.Start = s.published
	if s.closed {
		close(sub.lost)
		return sub
	}
	s.subs[sub] = struct{}{}
	return sub
}

// Unsubscribe ends a subscription.
func (s *Service) Unsubscribe(sub *Subscription) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.subs[sub]; ok {
		delete(s.subs, sub)
	}
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
	all := make([]*Published, len(events))
	now := time.Now()
	for i, e := range events {
		all[i] = &Published{Event: e, PublishedAt: now}
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
		select {
		case sub.events <- batch:
		default:
			s.dropLocked(sub)
		}
	}
}
