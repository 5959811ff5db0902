package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/fenceview/fenceview"
	"github.com/gorilla/websocket"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/fenceview/fenceview/internal/clock"
	"github.com/fenceview/fenceview/internal/server"
	"github.com/fenceview/fenceview/internal/servertest"
)

// startTest starts a server on the wall clock: the metrics time what
// really happens.
func startTest(t *testing.T) *servertest.Server {
	t.Helper()
	return servertest.Start(t, server.Config{Clock: clock.Real{}})
}

func post(t *testing.T, url, body string, header ...string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// traffic makes every kind of metric move: grants, an accepted and a
// refused write, plugin reports with made-up reasons, and an event stream
// client that receives them.
func traffic(t *testing.T, base string) {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/v1/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	steps := []struct {
		path, body string
		header     []string
		want       int
	}{
		{"/v1/locks/orders%2F1/acquire", `{"holder":"a"}`, nil, 200},
		{"/v1/locks/orders%2F1/release", `{"holder":"a"}`, nil, 200},
		{"/v1/locks/orders%2F1/acquire", `{"holder":"b"}`, nil, 200},
		{"/v1/fence/orders%2F1", "", []string{"X-Fencing-Token", "2"}, 200},
		{"/v1/fence/orders%2F1", "", []string{"X-Fencing-Token", "1"}, 409},
	}
	for _, s := range steps {
		if got := post(t, base+s.path, s.body, s.header...); got != s.want {
			t.Fatalf("POST %s: %d, want %d", s.path, got, s.want)
		}
	}
	var ds []string
	for i := range 40 {
		ds = append(ds, fmt.Sprintf(`{"resourceId":"plugin-%d","token":1,"accepted":false,"required":2,"reason":"made-up-%d","source":"test"}`, i, i))
	}
	if got := post(t, base+"/v1/decisions", `{"decisions":[`+strings.Join(ds, ",")+`]}`); got != 200 {
		t.Fatalf("POST /v1/decisions: %d", got)
	}
	// 5 changes and 40 reports: read events until the last report arrives.
	for n := 0; n < 45; n++ {
		var e map[string]any
		if err := ws.ReadJSON(&e); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMetricsByTheLibrary(t *testing.T) {
	s := startTest(t)
	traffic(t, s.URL())
	fams := scrape(t, s.URL())

	for _, name := range []string{
		// The names exported before client_golang, unchanged.
		"fenceview_grants_total", "fenceview_renewals_total", "fenceview_releases_total", "fenceview_expiries_total",
		"fenceview_fence_accepted_total", "fenceview_fence_rejected_total", "fenceview_waiters", "fenceview_stream_clients",
		"fenceview_stream_dropped_total", "fenceview_resources", "fenceview_locks_held", "fenceview_counter_alarms",
		"fenceview_counter_alarms_total", "fenceview_counter_resets_total", "fenceview_last_event_seq",
		// New.
		"fenceview_http_request_duration_seconds", "fenceview_commit_duration_seconds", "fenceview_commit_changes",
		"fenceview_sqlite_commit_seconds", "fenceview_stream_lag_seconds", "fenceview_commit_failures_total",
		"fenceview_sqlite_checkpoint_seconds", "fenceview_sqlite_checkpoint_failures_total", "fenceview_sqlite_wal_frames",
		"go_goroutines", "go_memstats_heap_alloc_bytes", "process_resident_memory_bytes", "process_open_fds",
	} {
		if fams[name] == nil {
			t.Errorf("metric %s missing", name)
		}
	}
	value := func(name string) float64 {
		f := fams[name]
		if f == nil || len(f.Metric) != 1 {
			t.Fatalf("%s: want one series, have %v", name, f)
		}
		m := f.Metric[0]
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
		return 0
	}
	if got := value("fenceview_grants_total"); got != 2 {
		t.Errorf("grants: %v, want 2", got)
	}
	if got := value("fenceview_fence_accepted_total"); got != 1 {
		t.Errorf("accepted: %v, want 1", got)
	}
	if got := value("fenceview_commit_duration_seconds"); got < 1 {
		t.Errorf("commits observed: %v", got)
	}
	if got := value("fenceview_sqlite_commit_seconds"); got < 1 {
		t.Errorf("SQLite commits observed: %v", got)
	}
	if got := value("fenceview_stream_lag_seconds"); got < 1 {
		t.Errorf("stream lag observations: %v", got)
	}
	h := fams["fenceview_commit_changes"].Metric[0].Histogram
	if h.GetSampleSum() != 45 {
		t.Errorf("changes committed: %v, want 45 (5 changes, 40 reports)", h.GetSampleSum())
	}

	// Reasons: the documented ones plus "other", however many a plugin invents.
	rejected := map[string]float64{}
	for _, m := range fams["fenceview_fence_rejected_total"].Metric {
		rejected[m.Label[0].GetValue()] = m.Counter.GetValue()
	}
	if len(rejected) != len(fenceview.KnownReasons)+1 {
		t.Errorf("rejected series: %v, want the %d known reasons and other", rejected, len(fenceview.KnownReasons))
	}
	if rejected["stale-token"] != 1 || rejected["other"] != 40 {
		t.Errorf("rejected: %v, want stale-token 1, other 40", rejected)
	}

	// Requests by route pattern and status, never by the resource in the path.
	seen := map[string]bool{}
	for _, m := range fams["fenceview_http_request_duration_seconds"].Metric {
		l := map[string]string{}
		for _, p := range m.Label {
			l[p.GetName()] = p.GetValue()
		}
		if strings.Contains(l["route"], "orders") {
			t.Errorf("route label carries a resource id: %v", l)
		}
		seen[l["method"]+" "+l["route"]+" "+l["status"]] = true
	}
	for _, want := range []string{
		"POST POST /v1/locks/{resource}/acquire 200", "POST POST /v1/fence/{resource} 409", "POST POST /v1/decisions 200",
	} {
		if !seen[want] {
			t.Errorf("no request series %q; have %v", want, seen)
		}
	}
}

// TestGrafanaDashboardQueriesExistingMetrics reads docs/grafana-dashboard.json
// and checks that every metric its queries name is exported.
func TestGrafanaDashboardQueriesExistingMetrics(t *testing.T) {
	raw, err := os.ReadFile("../../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard is not JSON: %v", err)
	}
	var exprs []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && (k == "expr" || k == "definition") {
					exprs = append(exprs, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(dash)
	if len(exprs) < 10 {
		t.Fatalf("only %d queries found", len(exprs))
	}

	s := startTest(t)
	traffic(t, s.URL())
	fams := scrape(t, s.URL())
	name := regexp.MustCompile(`\b(?:fenceview|go|process)_[a-zA-Z0-9_]+`)
	for _, e := range exprs {
		for _, n := range name.FindAllString(e, -1) {
			base := n
			if fams[n] == nil {
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					base = strings.TrimSuffix(base, suffix)
				}
			}
			f := fams[base]
			if f == nil {
				t.Errorf("query %q: no metric %s", e, n)
				continue
			}
			if base != n && f.GetType() != dto.MetricType_HISTOGRAM {
				t.Errorf("query %q: %s is not a histogram", e, base)
			}
		}
	}
}

// With auth on, requests are still counted by their route pattern: the
// credential check must not hide the route from the instrumentation.
func TestRequestMetricsNameRoutesWithAuthOn(t *testing.T) {
	s := servertest.Start(t, server.Config{AdminToken: "adm", Clock: clock.Real{}})
	if code := post(t, s.URL()+"/v1/locks/orders/acquire", `{"holder":"a"}`, "Authorization", "Bearer adm"); code != 200 {
		t.Fatalf("acquire: %d", code)
	}
	req, _ := http.NewRequest("GET", s.URL()+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer adm")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var routes []string
	for _, m := range fams["fenceview_http_request_duration_seconds"].GetMetric() {
		for _, l := range m.Label {
			if l.GetName() == "route" {
				routes = append(routes, l.GetValue())
			}
		}
	}
	if !strings.Contains(strings.Join(routes, "|"), "POST /v1/locks/{resource}/acquire") {
		t.Fatalf("request routes %q: no acquire", routes)
	}
}

// Made-up HTTP methods, short and huge, sent without a credential, used to
// add a series each to the request histogram: 300 took /metrics from 28 KB
// to 656 KB. Every method outside the standard ones is now "OTHER", so
// after the first the series stay the same in number and /metrics in size.
func TestMadeUpMethodsDoNotGrowMetrics(t *testing.T) {
	s := servertest.Start(t, server.Config{AdminToken: admin})
	send := func(method string) {
		t.Helper()
		c, err := net.Dial("tcp", strings.TrimPrefix(s.URL(), "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "%s /v1/locks/a/acquire HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", method)
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 401 {
			t.Fatalf("%.20s...: %d", method, res.StatusCode)
		}
	}
	measure := func() (series, size int) {
		t.Helper()
		a := call(t, nil, "GET", s.URL()+"/metrics", admin, nil)
		for _, line := range strings.Split(a.Raw, "\n") {
			if line != "" && !strings.HasPrefix(line, "#") {
				series++
			}
		}
		return series, len(a.Raw)
	}
	send("BREW")
	send("GET")
	measure() // the /metrics route's own series exist from here on
	series, size := measure()
	for i := range 300 {
		m := fmt.Sprintf("M%d", i)
		if i%30 == 0 {
			m += strings.Repeat("X", 64<<10)
		}
		send(m)
	}
	gotSeries, gotSize := measure()
	if gotSeries != series {
		t.Fatalf("series: %d before 300 made-up methods, %d after", series, gotSeries)
	}
	// Counters gain digits and the Go runtime's figures change: a few
	// hundred bytes, not a series per method.
	if gotSize > size+2048 {
		t.Fatalf("/metrics: %d bytes before 300 made-up methods, %d after", size, gotSize)
	}
	if !strings.Contains(call(t, nil, "GET", s.URL()+"/metrics", admin, nil).Raw, `method="OTHER"`) {
		t.Fatal(`no method="OTHER" series`)
	}
}
