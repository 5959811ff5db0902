package telemetry

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fenceview/fenceview/internal/issuer"
)

// lockTimesCollector exports the issuer's wait and hold histograms of
// every grant, by kind (issuer.Kind): a bounded label, never a resource's
// name.
type lockTimesCollector struct {
	times atomic.Pointer[func() []issuer.LockTimeHistograms]
}

var (
	waitDesc = prometheus.NewDesc("fenceview_lock_wait_seconds",
		"Time from an acquire's arrival to its grant (0 for an immediate grant), by what was asked for: lock, semaphore, multi, election.", []string{"kind"}, nil)
	holdDesc = prometheus.NewDesc("fenceview_lock_hold_seconds",
		"Time from a grant to its release, force-expire or lease end, by kind of lock (a multi-lock's locks hold as kind lock).", []string{"kind"}, nil)
)

func (c *lockTimesCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- waitDesc
	ch <- holdDesc
}

func (c *lockTimesCollector) Collect(ch chan<- prometheus.Metric) {
	t := c.times.Load()
	if t == nil {
		return
	}
	for _, k := range (*t)() {
		ch <- constHistogram(waitDesc, k.Waits, k.Kind)
		ch <- constHistogram(holdDesc, k.Holds, k.Kind)
	}
}

func constHistogram(desc *prometheus.Desc, h issuer.Histogram, kind string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(issuer.HistogramBounds))
	for i, b := range issuer.HistogramBounds {
		buckets[b] = h.Buckets[i]
	}
	return prometheus.MustNewConstHistogram(desc, h.Count, h.Sum, buckets, kind)
}
