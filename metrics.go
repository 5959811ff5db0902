package fenceview

import (
	"time"

	"github.com/fenceview/fenceview/guard"
)

// Kind is what a grant was asked for: a lock, a semaphore's permit, a
// multi-lock's set or an election's term. Metrics count by kind, never by
// name, so their labels stay a closed set.
type Kind int

// The kinds of grant; Kinds lists them.
const (
	KindLock Kind = iota
	KindPermit
	KindMulti
	KindElection
)

// Kinds is every Kind, in order.
var Kinds = [...]Kind{KindLock, KindPermit, KindMulti, KindElection}

func (k Kind) String() string {
	return [...]string{"lock", "semaphore", "multi", "election"}[k]
}

// Metrics is a snapshot of the lock authority's counters and gauges.
type Metrics struct {
	Grants, Renewals, Releases, Expiries, Accepted int64
	Rejected                                       []ReasonCount // by reason, sorted
	Waiters, StreamClients, Resources, Held        int
	StreamDropped                                  int64
	// LastSeq is the sequence number of the last durable event, as
	// ResourceService.LastSeq (events still being committed are not counted).
	LastSeq              int64
	CounterAlarms        int   // resources whose counter alarm is raised
	AlarmsRaised, Resets int64 // counter alarms raised, counter resets done
	// Kinds counts grants and waiters by what they were asked for.
	Kinds []KindCount
}

// KindCount is the grants made and the requests waiting of one Kind.
type KindCount struct {
	Kind    Kind
	Grants  int64
	Waiters int
}

// ReasonCount is the number of refusals for one reason.
type ReasonCount struct {
	Reason string
	Count  int64
}

// KnownReasons are the documented refusal reasons: the ones the counters
// (and so the metrics' reason label) keep apart. Any other reason (plugins
// may report their own) is counted as OtherReason, so no client can grow
// the counters or the metrics' series set.
var KnownReasons = []string{
	guard.ReasonStale, guard.ReasonForeignIssuer, guard.ReasonScopeMismatch,
	guard.ReasonUnissued, guard.ReasonBadSignature, guard.ReasonSuperseded,
}

// OtherReason counts every refusal whose reason is not in KnownReasons.
const OtherReason = "other"

// BoundReason is reason if it is known, OtherReason otherwise.
func BoundReason(reason string) string {
	for _, k := range KnownReasons {
		if reason == k {
			return reason
		}
	}
	return OtherReason
}

// Wait and hold times per lock, for on-call engineers looking for
// contention: how long the recent grants of a lock waited, how long its
// holders kept it. Only the TimedResources most recently active resources
// are kept, each with its last TimedSamples waits and holds.
const (
	TimedResources = 1024
	TimedSamples   = 64
)

// LockTimes is how long the recent grants of one lock waited and how long
// they were held: the last TimedSamples of each, while the lock is among
// the TimedResources most recently active.
type LockTimes struct {
	Waits, Holds DurationStats
}

// DurationStats summarises a window of durations. Count is the number of
// samples in the window (at most TimedSamples), Total every one recorded
// since the resource entered the window.
type DurationStats struct {
	Count         int
	Total         int64
	P50, P99, Max time.Duration
}

// HistogramBounds are the upper bounds, in seconds, of the aggregate wait
// and hold histograms' buckets: a millisecond to a day (MaxLease).
var HistogramBounds = [...]float64{0.001, 0.005, 0.025, 0.1, 0.5, 1, 5, 30, 120, 600, 3600, 86400}

// Histogram is a cumulative histogram of durations, in seconds, with the
// buckets HistogramBounds (Buckets[i] counts samples <= HistogramBounds[i]).
type Histogram struct {
	Count   uint64
	Sum     float64
	Buckets [len(HistogramBounds)]uint64
}

// Observe adds one duration.
func (h *Histogram) Observe(d time.Duration) {
	s := d.Seconds()
	h.Count++
	h.Sum += s
	for i, b := range HistogramBounds {
		if s <= b {
			h.Buckets[i]++
		}
	}
}

// LockTimeHistograms are the waits and holds of every lock of one kind.
type LockTimeHistograms struct {
	Kind         string // Kind.String()
	Waits, Holds Histogram
}
