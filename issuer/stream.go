package issuer

import (
	"github.com/fenceview/fenceview"
)

// Subscription receives committed events as they happen. A subscriber that
// falls behind by more than its buffer is dropped (Lost is closed): a slow
// reader must never stall a grant.
type Subscription struct {
	ResourceID string // "" for every resource
	// Start is the sequence number of the last event committed before the
	// subscription began; every later event is delivered on Events.
	Start  int64
	events chan fenceview.Event
	lost   chan struct{}
}

// Events delivers events in sequence order.
func (sub *Subscription) Events() <-chan fenceview.Event { return sub.events }

// Lost is closed when the subscription was dropped for falling behind or
// because the service closed.
func (sub *Subscription) Lost() <-chan struct{} { return sub.lost }

// Subscribe starts a subscription to events of resourceID ("" for all).
func (s *Service) Subscribe(resourceID string, buffer int) *Subscription {
	if buffer < 1 {
		buffer = 1
	}
	sub := &Subscription{ResourceID: resourceID, events: make(chan fenceview.Event, buffer), lost: make(chan struct{})}
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

// publishLocked hands e to every matching subscriber without blocking.
func (s *Service) publishLocked(e fenceview.Event) {
	for sub := range s.subs {
		if sub.ResourceID != "" && sub.ResourceID != e.ResourceID {
			continue
		}
		select {
		case sub.events <- e:
		default:
			s.dropLocked(sub)
		}
	}
}
