package load

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Op kinds, in report order. A cycle is one acquire plus one release; its
// rate is the "grants per second".
var Kinds = []string{"cycle", "acquire", "release", "fence", "stale"}

const (
	kCycle = iota
	kAcquire
	kRelease
	kFence
	kStale
	nKinds
)

// OpStats summarises one kind.
type OpStats struct {
	Count     int64   `json:"count"`
	OpsPerSec float64 `json:"opsPerSec"`
	MeanMs    float64 `json:"meanMs"`
	P50Ms     float64 `json:"p50Ms"`
	P99Ms     float64 `json:"p99Ms"`
	MaxMs     float64 `json:"maxMs"`
}

// Report is the outcome of a run.
type Report struct {
	Target      string             `json:"target"`
	Clients     int                `json:"clients"`
	Resources   int                `json:"resources"`
	Mix         Mix                `json:"mix"`
	DurationSec float64            `json:"durationSec"`
	Ops         map[string]OpStats `json:"ops"`
	// TokensChecked counts grants whose token was checked against the
	// previous one of its resource, warm-up included; the other counts
	// are of the measured time only.
	TokensChecked int64    `json:"tokensChecked"`
	Busy          int64    `json:"busy"`
	Accepted      int64    `json:"accepted"`
	Rejected      int64    `json:"rejected"`
	Errors        int64    `json:"errors"`
	Status5xx     int64    `json:"status5xx"`
	Violations    []string `json:"violations"`
	FirstErrors   []string `json:"firstErrors"`
	OK            bool     `json:"ok"`
	// CPU is the cost of an operation in CPU time, nil where it cannot
	// be read (not Linux) or the run was cancelled.
	CPU *CPU `json:"cpu,omitempty"`
}

// Err is non-nil when the run must fail: a violation, a 5xx or any error.
func (r *Report) Err() error {
	if r.OK {
		return nil
	}
	var why []string
	if n := len(r.Violations); n > 0 {
		why = append(why, fmt.Sprintf("%d violations (first: %s)", n, r.Violations[0]))
	}
	if r.Status5xx > 0 {
		why = append(why, fmt.Sprintf("%d responses 5xx", r.Status5xx))
	}
	if r.Errors > 0 {
		first := ""
		if len(r.FirstErrors) > 0 {
			first = " (first: " + r.FirstErrors[0] + ")"
		}
		why = append(why, fmt.Sprintf("%d errors%s", r.Errors, first))
	}
	return fmt.Errorf("%s: %s", r.Target, strings.Join(why, "; "))
}

// report sums the workers' counts and histograms over the measured
// elapsed seconds and adds the checker's violations.
func (st *run) report(target string, workers []*worker, elapsed float64) *Report {
	cfg := st.cfg
	rep := &Report{
		Target:      target,
		Clients:     cfg.Clients,
		Resources:   cfg.Resources,
		Mix:         cfg.Mix,
		DurationSec: elapsed,
		Ops:         map[string]OpStats{},
	}
	var total [nKinds]histogram
	for _, w := range workers {
		for k := range total {
			total[k].merge(&w.hist[k])
		}
		rep.TokensChecked += w.checked
		rep.Busy += w.busy
		rep.Accepted += w.accepted
		rep.Rejected += w.rejected
		rep.Errors += w.errs
		rep.Status5xx += w.s5xx
		if w.firstErr != "" && len(rep.FirstErrors) < 5 {
			rep.FirstErrors = append(rep.FirstErrors, w.firstErr)
		}
	}
	for k, h := range total {
		if h.n == 0 {
			continue
		}
		ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
		rep.Ops[Kinds[k]] = OpStats{
			Count:     h.n,
			OpsPerSec: float64(h.n) / elapsed,
			MeanMs:    float64(h.sum) / float64(h.n) / 1e6,
			P50Ms:     ms(h.quantile(0.50)),
			P99Ms:     ms(h.quantile(0.99)),
			MaxMs:     ms(time.Duration(h.max)),
		}
	}
	var nv int64
	rep.Violations, nv = st.check.Violations()
	if int64(len(rep.Violations)) < nv {
		rep.Violations = append(rep.Violations, fmt.Sprintf("... %d in all", nv))
	}
	if rep.Violations == nil {
		rep.Violations = []string{}
	}
	if rep.FirstErrors == nil {
		rep.FirstErrors = []string{}
	}
	rep.OK = nv == 0 && rep.Errors == 0
	return rep
}

// Print writes the report as a table.
func Print(out io.Writer, r *Report) {
	fmt.Fprintf(out, "%s: %d clients, %d resources, mix %s, %.1fs measured\n",
		r.Target, r.Clients, r.Resources, r.Mix, r.DurationSec)
	fmt.Fprintf(out, "%-8s %10s %10s %9s %9s %9s %9s\n", "kind", "ops", "ops/s", "mean ms", "p50 ms", "p99 ms", "max ms")
	for _, k := range Kinds {
		s, ok := r.Ops[k]
		if !ok {
			continue
		}
		fmt.Fprintf(out, "%-8s %10d %10.0f %9.3f %9.3f %9.3f %9.3f\n", k, s.Count, s.OpsPerSec, s.MeanMs, s.P50Ms, s.P99Ms, s.MaxMs)
	}
	fmt.Fprintf(out, "tokens checked %d (strictly increasing per resource: %v), busy %d, fenced writes accepted %d, refused %d, errors %d, 5xx %d\n",
		r.TokensChecked, len(r.Violations) == 0, r.Busy, r.Accepted, r.Rejected, r.Errors, r.Status5xx)
	if r.CPU != nil {
		fmt.Fprintf(out, "CPU: %s\n", r.CPU)
	}
	for _, v := range r.Violations {
		fmt.Fprintf(out, "VIOLATION: %s\n", v)
	}
	for _, e := range r.FirstErrors {
		fmt.Fprintf(out, "ERROR: %s\n", e)
	}
}
