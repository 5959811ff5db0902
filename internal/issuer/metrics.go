package issuer

import (
	"sort"
	"sync/atomic"
)

// Kind is what a grant was asked for: a lock, a semaphore's permit, a
// multi-lock's set or an election's term. Metrics count by kind, never by
// name, so their labels stay a closed set.
type Kind int

const (
	KindLock Kind = iota
	KindPermit
	KindMulti
	KindElection
	kinds
)

func (k Kind) String() string {
	return [...]string{"lock", "semaphore", "multi", "election"}[k]
}

type counters struct {
	byKind                                         [kinds]atomic.Int64 // grants
	grants, renewals, releases, expiries, accepted atomic.Int64
	streamDropped, alarms, resets                  atomic.Int64
	rejected                                       map[string]int64 // by reason; guarded by Service.mu
	times                                          *holdTimes       // holdtimes.go
}

func newCounters() counters {
	return counters{rejected: make(map[string]int64), times: newHoldTimes(TimedResources)}
}

func (c *counters) add(b *batch) {
	c.grants.Add(int64(b.grants))
	for k, n := range b.byKind {
		c.byKind[k].Add(int64(n))
	}
	c.renewals.Add(int64(b.renewals))
	c.releases.Add(int64(b.releases))
	c.expiries.Add(int64(b.expiries))
	c.accepted.Add(int64(b.accepted))
	c.alarms.Add(int64(len(b.alarms)))
	c.resets.Add(int64(b.resets))
	c.times.add(b.timed)
	for reason, n := range b.rejected {
		c.rejected[BoundReason(reason)] += int64(n) // bounded, whatever clients report
	}
}

// Metrics is a snapshot of the service's counters and gauges.
type Metrics struct {
	Grants, Renewals, Releases, Expiries, Accepted int64
	Rejected                                       []ReasonCount // by reason, sorted
	Waiters, StreamClients, Resources, Held        int
	StreamDropped                                  int64
	// LastSeq is the sequence number of the last durable event, as
	// Service.LastSeq (events still being committed are not counted).
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

// Metrics returns a snapshot of the counters.
func (s *Service) Metrics() Metrics {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := Metrics{
		Grants:        s.metrics.grants.Load(),
		Renewals:      s.metrics.renewals.Load(),
		Releases:      s.metrics.releases.Load(),
		Expiries:      s.metrics.expiries.Load(),
		Accepted:      s.metrics.accepted.Load(),
		StreamDropped: s.metrics.streamDropped.Load(),
		Waiters:       s.waiting,
		Kinds:         make([]KindCount, kinds),
		StreamClients: s.hub.count(),
		Resources:     len(s.resources),
		Held:          len(s.held),
		LastSeq:       s.published,
		CounterAlarms: len(s.alarmed),
		AlarmsRaised:  s.metrics.alarms.Load(),
		Resets:        s.metrics.resets.Load(),
	}
	for k := range kinds {
		m.Kinds[k] = KindCount{Kind: k, Grants: s.metrics.byKind[k].Load(), Waiters: s.waitingBy[k]}
	}
	for reason, n := range s.metrics.rejected {
		m.Rejected = append(m.Rejected, ReasonCount{reason, n})
	}
	sort.Slice(m.Rejected, func(i, j int) bool { return m.Rejected[i].Reason < m.Rejected[j].Reason })
	return m
}
