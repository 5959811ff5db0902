package issuer

import (
	"sort"
	"sync/atomic"

	"github.com/fenceview/fenceview"
)

type counters struct {
	byKind                                         [kinds]atomic.Int64 // grants
	grants, renewals, releases, expiries, accepted atomic.Int64
	streamDropped, alarms, resets                  atomic.Int64
	rejected                                       map[string]int64 // by reason; guarded by Service.mu
	times                                          *holdTimes       // holdtimes.go
}

func newCounters() counters {
	return counters{rejected: make(map[string]int64), times: newHoldTimes(fenceview.TimedResources)}
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
		c.rejected[fenceview.BoundReason(reason)] += int64(n) // bounded, whatever clients report
	}
}

// Metrics returns a snapshot of the counters.
func (s *Service) Metrics() fenceview.Metrics {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := fenceview.Metrics{
		Grants:        s.metrics.grants.Load(),
		Renewals:      s.metrics.renewals.Load(),
		Releases:      s.metrics.releases.Load(),
		Expiries:      s.metrics.expiries.Load(),
		Accepted:      s.metrics.accepted.Load(),
		StreamDropped: s.metrics.streamDropped.Load(),
		Waiters:       s.waiting,
		Kinds:         make([]fenceview.KindCount, kinds),
		StreamClients: s.hub.count(),
		Resources:     len(s.resources),
		Held:          len(s.held),
		LastSeq:       s.published,
		CounterAlarms: len(s.alarmed),
		AlarmsRaised:  s.metrics.alarms.Load(),
		Resets:        s.metrics.resets.Load(),
	}
	for k := range kinds {
		m.Kinds[k] = fenceview.KindCount{Kind: fenceview.Kind(k), Grants: s.metrics.byKind[k].Load(), Waiters: s.waitingBy[k]}
	}
	for reason, n := range s.metrics.rejected {
		m.Rejected = append(m.Rejected, fenceview.ReasonCount{Reason: reason, Count: n})
	}
	sort.Slice(m.Rejected, func(i, j int) bool { return m.Rejected[i].Reason < m.Rejected[j].Reason })
	return m
}
