package fenceview

import "time"

// Published is an event as subscribers receive it: every subscriber gets
// the same *Published.
type Published struct {
	Event
	// PublishedAt is when the event's commit was published (wall clock,
	// monotonic): how long it then waits for a client is the stream's lag.
	PublishedAt time.Time
}

// Subscription receives committed events as they happen, in batches: all
// the events of one group commit that match arrive together, so a watcher
// wakes once per commit, not once per event. A subscriber that falls behind
// (by its buffer of batches, or by a bound of bytes not yet Released) is
// dropped: Lost is closed. A slow reader never stalls a grant; it can
// resume from the durable history (the event stream's ?since=).
type Subscription interface {
	// Start is the sequence number of the last event committed before the
	// subscription began; every later event is delivered on Events.
	Start() int64
	// Events delivers batches of events, in sequence order.
	Events() <-chan []*Published
	// Release tells the subscription a batch received from Events is done
	// with, so its bytes leave the backlog.
	Release(batch []*Published)
	// Lost is closed when the subscription was dropped for falling behind
	// or because the service closed.
	Lost() <-chan struct{}
}

// MinuteCount is how many events of a type (and, for rejections, a
// reason) were recorded in one minute.
type MinuteCount struct {
	Minute time.Time
	Type   string
	Reason string
	N      int64
}

// Retention bounds the history: events recorded (by their time) more than
// MaxAge ago, and every event but the newest MaxEvents sequence numbers,
// are pruned. Zero leaves that bound off; both zero keep everything.
//
// Pruning removes events and their index rows, never a resource's
// counter, mark, lock or alarm: those are state, not history, and live as
// long as the database.
type Retention struct {
	MaxAge    time.Duration
	MaxEvents int64
}

// KeepsAll reports whether r prunes nothing.
func (r Retention) KeepsAll() bool { return r.MaxAge <= 0 && r.MaxEvents <= 0 }
