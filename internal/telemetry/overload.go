package telemetry

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// overloadMetrics are admission control's (httpapi's Overload): requests
// shed, how long the admitted ones waited for a seat, and how long those
// of a key busier than the others were held back.
type overloadMetrics struct {
	shed        *prometheus.CounterVec
	queueWait   *prometheus.HistogramVec
	queueWaitBy map[string]prometheus.Observer // by priority: every request of the API observes one
	paced       *prometheus.HistogramVec
}

func newOverloadMetrics(r *prometheus.Registry) overloadMetrics {
	o := overloadMetrics{
		shed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fenceview_overload_shed_total",
			Help: "Requests refused by admission control, nothing done: by the class of their flow (key, admin, address), their level (lease, new) and why (queue-full, total-full, evicted, wait, rate: shed with 429 overloaded; waiters: over --max-waiters-per-key, 429 limit; gone: the caller left while queued).",
		}, []string{"flow_class", "priority", "reason"}),
		queueWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "fenceview_overload_queue_wait_seconds",
			Help:    "How long admitted requests waited for a seat, by level (lease, new): zero while the server is not busy.",
			Buckets: durationBuckets,
		}, []string{"priority"}),
		paced: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "fenceview_overload_paced_seconds",
			Help:    "How long new requests of a key busier than every other were held back before being read, while the server was contended (--overload-flow-rate), by the class of their flow (key, admin, address).",
			Buckets: durationBuckets,
		}, []string{"flow_class"}),
	}
	o.queueWaitBy = map[string]prometheus.Observer{}
	for _, p := range []string{"lease", "new"} {
		o.queueWaitBy[p] = o.queueWait.WithLabelValues(p)
	}
	r.MustRegister(o.shed, o.queueWait, o.paced)
	return o
}

// ObserveShed counts a request shed by admission control.
func (m *Metrics) ObserveShed(flowClass, priority, reason string) {
	m.overload.shed.WithLabelValues(flowClass, priority, reason).Inc()
}

// ObserveQueueWait records how long an admitted request waited for a seat.
func (m *Metrics) ObserveQueueWait(priority string, d time.Duration) {
	o, ok := m.overload.queueWaitBy[priority]
	if !ok {
		o = m.overload.queueWait.WithLabelValues(priority)
	}
	o.Observe(d.Seconds())
}

// ObservePace records how long a request was held back by pacing.
func (m *Metrics) ObservePace(flowClass string, d time.Duration) {
	m.overload.paced.WithLabelValues(flowClass).Observe(d.Seconds())
}
