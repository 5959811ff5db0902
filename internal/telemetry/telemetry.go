// Package telemetry is how fenceview is watched from outside: its
// Prometheus metrics (client_golang, one registry) and its access log.
//
// The lock service keeps its own counters (fenceview.Metrics) because the
// dashboard reads them too; a collector turns each scrape's snapshot into
// the metrics of the same names fenceview has always exported. Timings the
// service cannot know by itself (requests, commits, fsyncs, the event
// stream) are histograms fed through small hooks.
package telemetry

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds the registry and the histograms fed by hooks.
type Metrics struct {
	Registry *prometheus.Registry

	requests      *prometheus.HistogramVec
	requestsBy    sync.Map // requestLabels → prometheus.Observer: a lookup per request without hashing labels
	commit        prometheus.Histogram
	commitChanges prometheus.Histogram
	commitFailed  prometheus.Counter
	fsync         prometheus.Histogram
	checkpoint    prometheus.Histogram
	ckptFailed    prometheus.Counter
	walFrames     prometheus.Gauge
	streamLag     prometheus.Histogram
	grantWait     *prometheus.HistogramVec
	grantWaitBy   map[string]prometheus.Observer // by kind, filled in New

	watchOnce sync.Once
	service   serviceCollector
	lockTimes lockTimesCollector // locktimes.go
	overload  overloadMetrics    // overload.go
}

// Buckets for durations in seconds: 0.25 ms to about 8 s, where a fenceview
// request or commit lives (an fsync is a few ms, a waiter up to minutes).
var durationBuckets = prometheus.ExponentialBuckets(0.00025, 2, 16)

// seconds is a histogram of durations in seconds (durationBuckets).
func seconds(name, help string) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: durationBuckets})
}

// New returns metrics with the Go and process collectors registered. Call
// Watch once the service exists.
func New() *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry()}
	m.requests = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "fenceview_http_request_duration_seconds",
		Help:    "HTTP requests by route pattern, method and status, from the first byte read to the last written. Websocket upgrades are not included (their connections live for hours).",
		Buckets: durationBuckets,
	}, []string{"route", "method", "status"})
	m.commit = seconds("fenceview_commit_duration_seconds",
		"Group commits: the whole durable write of one group of changes (SQL statements and fsync).")
	m.commitChanges = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "fenceview_commit_changes",
		Help:    "Changes (events) written by one group commit: how many requests share an fsync.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 12),
	})
	m.commitFailed = prometheus.NewCounter(prometheus.CounterOpts{Name: "fenceview_commit_failures_total",
		Help: "Group commits that failed (disk full, I/O error); every change in them was refused with 503."})
	m.fsync = seconds("fenceview_sqlite_commit_seconds",
		"SQLite COMMIT of a group commit: with WAL and synchronous=FULL, the fsync of the WAL.")
	m.checkpoint = seconds("fenceview_sqlite_checkpoint_seconds",
		"SQLite checkpoints, run beside the commits every 200 commits: the WAL copied into the database file and fsynced.")
	m.ckptFailed = prometheus.NewCounter(prometheus.CounterOpts{Name: "fenceview_sqlite_checkpoint_failures_total",
		Help: "SQLite checkpoints that failed; nothing is lost, but the WAL grows until one succeeds."})
	m.walFrames = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "fenceview_sqlite_wal_frames",
		Help: "Frames (pages) in the SQLite WAL at the last checkpoint: a WAL that keeps growing means checkpoints cannot finish (a long read holds them back).",
	})
	m.grantWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "fenceview_grant_wait_seconds",
		Help: "Grants answered over the JSON API and the RPC stream by kind (lock, semaphore, multi, election; a multi-lock once), " +
			"and how long each took from the request, waiting for the lock included.",
		Buckets: waitBuckets,
	}, []string{"kind"})
	m.grantWaitBy = map[string]prometheus.Observer{}
	for _, k := range grantKinds { // every kind from the first scrape, so rates start at 0
		m.grantWaitBy[k.String()] = m.grantWait.WithLabelValues(k.String())
	}
	m.streamLag = seconds("fenceview_stream_lag_seconds",
		"Event stream lag: from an event's publication (its commit is durable) to its frame leaving for a websocket client.")
	m.overload = newOverloadMetrics(m.Registry)
	m.Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.requests, m.commit, m.commitChanges, m.commitFailed, m.fsync, m.streamLag,
		m.checkpoint, m.ckptFailed, m.walFrames, m.grantWait,
	)
	return m
}

// Watch exports the service's counters and gauges. It may be called
// again with a new service (a cluster node's next term as leader): the
// metrics then follow that one.
func (m *Metrics) Watch(svc fenceview.MetricsService) {
	m.watchOnce.Do(func() { m.Registry.MustRegister(&m.service, &m.lockTimes) })
	m.service.snapshot.set(svc.Metrics)
	m.lockTimes.times.set(svc.LockTimeHistograms)
}

// source is what a collector reads at each scrape: the watched service's
// function, swapped atomically when Watch is called again.
type source[T any] struct{ f atomic.Pointer[func() T] }

func (s *source[T]) set(f func() T) { s.f.Store(&f) }

// read calls the function; false before Watch (nothing to collect).
func (s *source[T]) read() (v T, ok bool) {
	f := s.f.Load()
	if f == nil {
		return v, false
	}
	return (*f)(), true
}

// Handler serves the registry in Prometheus' exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// ObserveCommit records one group commit (the issuer's CommitObserver).
func (m *Metrics) ObserveCommit(d time.Duration, changes int, err error) {
	if observeRun(m.commitFailed, m.commit, d, err) {
		m.commitChanges.Observe(float64(changes))
	}
}

// ObserveSQLiteCommit records the time of one SQLite COMMIT.
func (m *Metrics) ObserveSQLiteCommit(d time.Duration) { m.fsync.Observe(d.Seconds()) }

// ObserveCheckpoint records one background checkpoint of the database.
func (m *Metrics) ObserveCheckpoint(d time.Duration, walFrames int, err error) {
	if observeRun(m.ckptFailed, m.checkpoint, d, err) {
		m.walFrames.Set(float64(walFrames))
	}
}

// observeRun records one run of a background job: a failure, or its time
// d. It reports whether the run succeeded.
func observeRun(failed prometheus.Counter, took prometheus.Observer, d time.Duration, err error) bool {
	if err != nil {
		failed.Inc()
		return false
	}
	took.Observe(d.Seconds())
	return true
}

// waitBuckets reach from a grant at once (a commit, about a millisecond)
// to the longest wait an acquire may ask for (5 minutes).
var waitBuckets = prometheus.ExponentialBuckets(0.001, 4, 10)

// grantKinds are the kind label's values: every fenceview.Kind.
var grantKinds = fenceview.Kinds

// ObserveGrant records one grant of kind and how long it took, waiting
// included (httpapi's Server.ObserveGrant).
func (m *Metrics) ObserveGrant(kind fenceview.Kind, took time.Duration) {
	o, ok := m.grantWaitBy[kind.String()]
	if !ok {
		o = m.grantWait.WithLabelValues(kind.String())
	}
	o.Observe(took.Seconds())
}

// ObserveStreamLag records how long an event waited for a stream client.
func (m *Metrics) ObserveStreamLag(d time.Duration) { m.streamLag.Observe(d.Seconds()) }

// requestLabels are a request's labels: route patterns, methodLabel's
// methods and the server's own statuses, so as few as the series.
type requestLabels struct {
	route, method string
	status        int
}

// observeRequest records a request. Its series' observer is looked up
// once and kept: WithLabelValues hashes the labels and takes the vector's
// lock, a cost every request paid.
func (m *Metrics) observeRequest(route, method string, status int, d time.Duration) {
	k := requestLabels{route, method, status}
	o, ok := m.requestsBy.Load(k)
	if !ok {
		o, _ = m.requestsBy.LoadOrStore(k, m.requests.WithLabelValues(route, method, strconv.Itoa(status)))
	}
	o.(prometheus.Observer).Observe(d.Seconds())
}

// serviceCollector turns fenceview.Metrics snapshots into const metrics,
// under the names fenceview exported before client_golang.
type serviceCollector struct {
	snapshot source[fenceview.Metrics]
}

type serviceMetric struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(fenceview.Metrics) float64
}

var (
	grantsByKindDesc = prometheus.NewDesc("fenceview_grants_by_kind_total",
		"Grants by what was asked for: lock, semaphore (a permit), multi (a multi-lock's set), election (a term).", []string{"kind"}, nil)
	waitersByKindDesc = prometheus.NewDesc("fenceview_waiters_by_kind",
		"Requests waiting, by what they asked for (as fenceview_grants_by_kind_total).", []string{"kind"}, nil)
	rejectedDesc = prometheus.NewDesc("fenceview_fence_rejected_total",
		"Fenced writes refused, by reason (reasons outside the documented set count as \"other\").", []string{"reason"}, nil)
	serviceMetrics = []serviceMetric{
		counter("fenceview_grants_total", "Lock grants, re-entrant ones and hand-offs to waiters included.", func(m fenceview.Metrics) int64 { return m.Grants }),
		counter("fenceview_renewals_total", "Lease renewals.", func(m fenceview.Metrics) int64 { return m.Renewals }),
		counter("fenceview_releases_total", "Releases by the lock holder.", func(m fenceview.Metrics) int64 { return m.Releases }),
		counter("fenceview_expiries_total", "Leases that ran out or were force-expired.", func(m fenceview.Metrics) int64 { return m.Expiries }),
		counter("fenceview_fence_accepted_total", "Fenced writes accepted (server guard and plugin reports).", func(m fenceview.Metrics) int64 { return m.Accepted }),
		gauge("fenceview_waiters", "Acquire requests waiting for a lock.", func(m fenceview.Metrics) int64 { return int64(m.Waiters) }),
		gauge("fenceview_stream_clients", "Connected event stream clients.", func(m fenceview.Metrics) int64 { return int64(m.StreamClients) }),
		counter("fenceview_stream_dropped_total", "Stream clients dropped for falling behind.", func(m fenceview.Metrics) int64 { return m.StreamDropped }),
		gauge("fenceview_resources", "Resources known to the server.", func(m fenceview.Metrics) int64 { return int64(m.Resources) }),
		gauge("fenceview_locks_held", "Locks currently held.", func(m fenceview.Metrics) int64 { return int64(m.Held) }),
		gauge("fenceview_counter_alarms", "Resources whose token counter is behind a recorded high-water mark, until reset.", func(m fenceview.Metrics) int64 { return int64(m.CounterAlarms) }),
		counter("fenceview_counter_alarms_total", "Counter-behind alarms raised.", func(m fenceview.Metrics) int64 { return m.AlarmsRaised }),
		counter("fenceview_counter_resets_total", "Token counters reset by an admin.", func(m fenceview.Metrics) int64 { return m.Resets }),
		gauge("fenceview_last_event_seq", "Sequence number of the last recorded event.", func(m fenceview.Metrics) int64 { return m.LastSeq }),
	}
)

func counter(name, help string, v func(fenceview.Metrics) int64) serviceMetric {
	return serviceMetric{prometheus.NewDesc(name, help, nil, nil), prometheus.CounterValue, func(m fenceview.Metrics) float64 { return float64(v(m)) }}
}

func gauge(name, help string, v func(fenceview.Metrics) int64) serviceMetric {
	return serviceMetric{prometheus.NewDesc(name, help, nil, nil), prometheus.GaugeValue, func(m fenceview.Metrics) float64 { return float64(v(m)) }}
}

func (c *serviceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, sm := range serviceMetrics {
		ch <- sm.desc
	}
	ch <- rejectedDesc
	ch <- grantsByKindDesc
	ch <- waitersByKindDesc
}

func (c *serviceCollector) Collect(ch chan<- prometheus.Metric) {
	m, ok := c.snapshot.read()
	if !ok {
		return
	}
	for _, sm := range serviceMetrics {
		ch <- prometheus.MustNewConstMetric(sm.desc, sm.kind, sm.value(m))
	}
	for reason, n := range boundReasons(m.Rejected) {
		ch <- prometheus.MustNewConstMetric(rejectedDesc, prometheus.CounterValue, float64(n), reason)
	}
	for _, k := range m.Kinds {
		ch <- prometheus.MustNewConstMetric(grantsByKindDesc, prometheus.CounterValue, float64(k.Grants), k.Kind.String())
		ch <- prometheus.MustNewConstMetric(waitersByKindDesc, prometheus.GaugeValue, float64(k.Waiters), k.Kind.String())
	}
}

// boundReasons folds refusal counts into the known reasons plus "other".
// The known reasons are always present (0 when none), so a rate over them
// starts from the first scrape.
func boundReasons(counts []fenceview.ReasonCount) map[string]int64 {
	out := make(map[string]int64, len(fenceview.KnownReasons)+1)
	for _, r := range fenceview.KnownReasons {
		out[r] = 0
	}
	out[fenceview.OtherReason] = 0
	for _, rc := range counts {
		if _, ok := out[rc.Reason]; ok && rc.Reason != fenceview.OtherReason {
			out[rc.Reason] += rc.Count
		} else {
			out[fenceview.OtherReason] += rc.Count
		}
	}
	return out
}
