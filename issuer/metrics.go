package issuer

import (
	"sort"
	"sync/atomic"
)

type counters struct {
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
		StreamClients: len(s.subs),
		Resources:     len(s.resources),
		Held:          len(s.held),
		LastSeq:       s.published,
		CounterAlarms: len(s.alarmed),
		AlarmsRaised:  s.metrics.alarms.Load(),
		Resets:        s.metrics.resets.Load(),
	}
	for reason, n := range s.metrics.rejected {
		m.Rejected = append(m.Rejected, ReasonCount{reason, n})
	}
	sort.Slice(m.Rejected, func(i, j int) bool { return m.Rejected[i].Reason < m.Rejected[j].Reason })
	return m
}
