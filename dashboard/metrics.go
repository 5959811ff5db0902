package dashboard

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// readable turns the Prometheus registry into lines a person reads:
// fenceview's own metrics first, histograms as count, mean, p50 and p99
// (estimated from the buckets, as Prometheus' histogram_quantile does).
func readable(fams []*dto.MetricFamily) []MetricSeries {
	sort.SliceStable(fams, func(i, j int) bool {
		a, b := strings.HasPrefix(fams[i].GetName(), "fenceview_"), strings.HasPrefix(fams[j].GetName(), "fenceview_")
		if a != b {
			return a
		}
		return fams[i].GetName() < fams[j].GetName()
	})
	var out []MetricSeries
	for _, f := range fams {
		name := f.GetName()
		if strings.HasPrefix(name, "go_") && !keepGo[name] {
			continue // the runtime's dozens of series stay in /metrics
		}
		s := MetricSeries{Name: name, Help: f.GetHelp()}
		for _, m := range f.Metric {
			var labels []string
			for _, l := range m.Label {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			v := MetricValue{Labels: strings.Join(labels, " ")}
			switch {
			case m.Counter != nil:
				v.Value, v.At = valueText(name, m.Counter.GetValue()), valueTime(name, m.Counter.GetValue())
			case m.Gauge != nil:
				v.Value, v.At = valueText(name, m.Gauge.GetValue()), valueTime(name, m.Gauge.GetValue())
			case m.Histogram != nil:
				v.Value = histogramText(m.Histogram, strings.HasSuffix(name, "_seconds"))
			default:
				continue
			}
			s.Values = append(s.Values, v)
		}
		if len(s.Values) > 0 {
			out = append(out, s)
		}
	}
	return out
}

var keepGo = map[string]bool{"go_goroutines": true, "go_memstats_heap_alloc_bytes": true, "go_gc_duration_seconds": true}

// num is a value in plain digits, never in e-notation: whole numbers as
// they are, large ones rounded to units, others to four significant digits.
func num(f float64) string {
	a := math.Abs(f)
	switch {
	case f == math.Trunc(f) && a < 1e15:
		return group(int64(f))
	case a >= 1e4 && a < 1e18:
		return group(int64(math.Round(f)))
	case a >= 1e4:
		return strconv.FormatFloat(f, 'f', 0, 64)
	case a < 1e-3:
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', 4, 64)
}

// valueTime is the instant a counter or gauge of Unix seconds names (zero
// for others), shown beside it in the viewer's zone like every time.
func valueTime(name string, f float64) time.Time {
	if strings.HasSuffix(name, "_time_seconds") && f > 0 && f < 1e11 {
		return time.Unix(int64(f), 0).UTC()
	}
	return time.Time{}
}

// valueText is a counter or gauge: bytes also in MiB or GiB, so a figure
// such as 4.634e+08 reads as what it is.
func valueText(name string, f float64) string {
	if strings.HasSuffix(name, "_bytes") || strings.HasSuffix(name, "_bytes_total") {
		switch {
		case f >= 1<<60: // what the kernel reports for "unlimited"
			return "no limit"
		case f >= 1<<30:
			return num(f) + " (" + strconv.FormatFloat(f/(1<<30), 'f', 1, 64) + " GiB)"
		case f >= 1<<20:
			return num(f) + " (" + strconv.FormatFloat(f/(1<<20), 'f', 1, 64) + " MiB)"
		}
	}
	return num(f)
}

// histogramText is a histogram as count, mean, p50 and p99. Histograms in
// seconds get units; the others count things (changes per commit), so
// their quantiles are whole numbers: the rank's observation is an integer
// in its bucket, so the estimate is rounded up, never below the bucket.
func histogramText(h *dto.Histogram, seconds bool) string {
	n := h.GetSampleCount()
	if n == 0 {
		return "no observations"
	}
	unit := func(v float64) string {
		if !seconds {
			return strconv.FormatFloat(v, 'f', 1, 64)
		}
		switch {
		case v < 0.001:
			return strconv.FormatFloat(v*1e6, 'f', 0, 64) + " µs"
		case v < 1:
			return strconv.FormatFloat(v*1e3, 'f', 1, 64) + " ms"
		}
		return strconv.FormatFloat(v, 'f', 2, 64) + " s"
	}
	q := func(p float64) string {
		v, above := quantile(h, p, !seconds)
		switch {
		case above:
			return "> " + unit(v)
		case !seconds:
			return strconv.FormatFloat(v, 'f', 0, 64)
		}
		return unit(v)
	}
	return group(int64(min(n, math.MaxInt64))) + " observed, mean " + unit(h.GetSampleSum()/float64(n)) +
		", p50 " + q(0.5) + ", p99 " + q(0.99)
}

// quantile interpolates linearly within the bucket holding rank q, as
// Prometheus' histogram_quantile does; integers rounds the estimate up to
// a whole number within that bucket. above reports a rank beyond the last
// finite bound: the value is then only known to exceed it.
func quantile(h *dto.Histogram, q float64, integers bool) (v float64, above bool) {
	rank := q * float64(h.GetSampleCount())
	prevBound, prevCount := 0.0, 0.0
	for _, b := range h.Bucket {
		c := float64(b.GetCumulativeCount())
		if math.IsInf(b.GetUpperBound(), 1) {
			break
		}
		if c >= rank {
			v = b.GetUpperBound()
			if c != prevCount {
				v = prevBound + (b.GetUpperBound()-prevBound)*(rank-prevCount)/(c-prevCount)
			}
			if integers {
				// The bucket (prevBound, bound] holds the integers
				// floor(prevBound)+1 to floor(bound).
				v = min(max(math.Ceil(v), math.Floor(prevBound)+1), math.Floor(b.GetUpperBound()))
			}
			return v, false
		}
		prevBound, prevCount = b.GetUpperBound(), c
	}
	return prevBound, true
}
