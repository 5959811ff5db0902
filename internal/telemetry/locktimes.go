package telemetry

import (
	"github.com/fenceview/fenceview"
	"github.com/prometheus/client_golang/prometheus"
)

// lockTimesCollector exports the issuer's wait and hold histograms of
// every grant, by kind (fenceview.Kind): a bounded label, never a resource's
// name.
type lockTimesCollector struct {
	times source[[]fenceview.LockTimeHistograms]
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
	times, _ := c.times.read() // none before Watch
	for _, k := range times {
		ch <- constHistogram(waitDesc, k.Waits, k.Kind)
		ch <- constHistogram(holdDesc, k.Holds, k.Kind)
	}
}

func constHistogram(desc *prometheus.Desc, h fenceview.Histogram, kind string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(fenceview.HistogramBounds))
	for i, b := range fenceview.HistogramBounds {
		buckets[b] = h.Buckets[i]
	}
	return prometheus.MustNewConstHistogram(desc, h.Count, h.Sum, buckets, kind)
}
