package httpapi

import (
	"fmt"
	"net/http"
	"strings"
)

// handleMetrics writes the service's counters in Prometheus' text format.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	m := s.Service.Metrics()
	var b strings.Builder
	metric := func(name, kind, help string, v int64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n%s %d\n", name, help, name, kind, name, v)
	}
	metric("fenceview_grants_total", "counter", "Lock grants, re-entrant ones and hand-offs to waiters included.", m.Grants)
	metric("fenceview_renewals_total", "counter", "Lease renewals.", m.Renewals)
	metric("fenceview_releases_total", "counter", "Releases by the lock holder.", m.Releases)
	metric("fenceview_expiries_total", "counter", "Leases that ran out or were force-expired.", m.Expiries)
	metric("fenceview_fence_accepted_total", "counter", "Fenced writes accepted (server guard and plugin reports).", m.Accepted)
	fmt.Fprintf(&b, "# HELP fenceview_fence_rejected_total Fenced writes refused, by reason.\n# TYPE fenceview_fence_rejected_total counter\n")
	for _, rc := range m.Rejected {
		fmt.Fprintf(&b, "fenceview_fence_rejected_total{reason=\"%s\"} %d\n", labelEscaper.Replace(rc.Reason), rc.Count)
	}
	metric("fenceview_waiters", "gauge", "Acquire requests waiting for a lock.", int64(m.Waiters))
	metric("fenceview_stream_clients", "gauge", "Connected event stream clients.", int64(m.StreamClients))
	metric("fenceview_stream_dropped_total", "counter", "Stream clients dropped for falling behind.", m.StreamDropped)
	metric("fenceview_resources", "gauge", "Resources known to the server.", int64(m.Resources))
	metric("fenceview_locks_held", "gauge", "Locks currently held.", int64(m.Held))
	metric("fenceview_counter_alarms", "gauge", "Resources whose token counter is behind a recorded high-water mark, until reset.", int64(m.CounterAlarms))
	metric("fenceview_counter_alarms_total", "counter", "Counter-behind alarms raised.", m.AlarmsRaised)
	metric("fenceview_counter_resets_total", "counter", "Token counters reset by an admin.", m.Resets)
	metric("fenceview_last_event_seq", "gauge", "Sequence number of the last recorded event.", m.LastSeq)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write([]byte(b.String()))
}

// labelEscaper escapes a label value by Prometheus' text format rules (Go's
// %q is not them: it writes \u escapes the format does not know).
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
