package main

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func report(s *testServer, d map[string]any) response {
	s.t.Helper()
	return s.do("POST", "/v1/decisions", map[string]any{"decisions": []map[string]any{d}})
}

// scrape reads /metrics with Prometheus' own parser: a scrape that does not
// parse is lost, whole.
func scrape(t *testing.T, s *testServer) map[string]int {
	t.Helper()
	r := s.do("GET", "/metrics", nil)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(r.Raw)))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, r.Raw)
	}
	out := map[string]int{}
	for name, f := range fams {
		out[name] = len(f.GetMetric())
	}
	return out
}

// Issue 11: a reported reason was written into /metrics with Go quoting,
// and one report broke every scrape until restart. Reasons now have a
// charset; a refused one changes nothing, and whatever valid reasons
// clients make up, the label set stays bounded.
func TestHostileReasonsCannotBreakOrFloodMetrics(t *testing.T) {
	s := startServer(t)
	scrape(t, s)
	for _, reason := range []string{"a\"b", "x\ny", `back\slash`, "\u00e9t\u00e9", "UPPER", "-lead", "r{a=\"b\"}", strings.Repeat("a", 65)} {
		if r := report(s, map[string]any{"resourceId": "r", "token": 1, "accepted": false, "reason": reason, "source": "p"}); r.Status != 400 {
			t.Fatalf("reason %q: %d %s", reason, r.Status, r.Raw)
		}
	}
	if r := s.do("GET", "/v1/resources/r", nil); r.Status != 404 {
		t.Fatalf("a refused report recorded something: %d %s", r.Status, r.Raw)
	}
	for i := 0; i < 100; i++ {
		if r := report(s, map[string]any{"resourceId": "r", "token": 1, "accepted": false, "reason": fmt.Sprintf("made-up-%d", i), "source": "p"}); r.Status != 200 {
			t.Fatalf("valid reason: %d %s", r.Status, r.Raw)
		}
	}
	if n := scrape(t, s)["fenceview_fence_rejected_total"]; n == 0 || n > 22 {
		t.Fatalf("rejection label values = %d, want 1..22 whatever clients report", n)
	}
}

// Sources land in the history, the CSV export and the dashboard: a small
// charset, starting with a letter or digit (no spreadsheet formula, no
// markup, no quotes).
func TestHostileSourcesAreRefused(t *testing.T) {
	s := startServer(t)
	for _, src := range []string{"", "=HYPERLINK(\"x\")", "+1", "@SUM(A1)", "-2", "<script>", "a b", "api:\"x\"", "a\tb", strings.Repeat("s", 201), "caf\u00e9"} {
		if r := report(s, map[string]any{"resourceId": "r", "token": 1, "accepted": true, "source": src}); r.Status != 400 {
			t.Fatalf("report source %q: %d %s", src, r.Status, r.Raw)
		}
		if src == "" {
			continue // the fence names its caller when no source is given
		}
		if r := s.do("POST", "/v1/fence/r", map[string]any{"token": 1, "source": src}); r.Status != 400 {
			t.Fatalf("fence source %q: %d %s", src, r.Status, r.Raw)
		}
	}
	for _, src := range []string{"api:10.0.0.7", "plugin/orders-db", "rpc:::1", "wasm:fe80::1%eth0", "g@host#2"} {
		if r := report(s, map[string]any{"resourceId": "r", "token": 1, "accepted": true, "source": src}); r.Status != 200 {
			t.Fatalf("report source %q: %d %s", src, r.Status, r.Raw)
		}
	}
}

// A reported time orders the history ("newest first"): one from the far
// future would sit on top forever, one from the far past would hide.
func TestReportedTimesHaveABoundedSkew(t *testing.T) {
	s := startServer(t)
	for _, at := range []time.Time{t0.Add(6 * time.Minute), t0.AddDate(100, 0, 0), t0.Add(-25 * time.Hour), time.Unix(0, 0)} {
		r := report(s, map[string]any{"resourceId": "r", "token": 1, "accepted": false, "source": "p", "at": at.Format(time.RFC3339Nano)})
		if r.Status != 400 {
			t.Fatalf("at %v: %d %s", at, r.Status, r.Raw)
		}
	}
	for _, at := range []time.Time{t0.Add(4 * time.Minute), t0.Add(-23 * time.Hour)} {
		r := report(s, map[string]any{"resourceId": "r", "token": 1, "accepted": false, "source": "p", "at": at.Format(time.RFC3339Nano)})
		if r.Status != 200 {
			t.Fatalf("at %v: %d %s", at, r.Status, r.Raw)
		}
	}
}

// Ids that cannot be told apart on screen are refused for new resources
// and holders: zero-width characters, direction overrides and isolates,
// non-ASCII spaces. Other scripts are welcome.
func TestInvisibleAndDirectionChangingIdsAreRefused(t *testing.T) {
	s := startServer(t)
	for _, id := range []string{"shard-1\u200b", "\u202eshard", "a\u2066b\u2069", "\ufeffx", "a\u00a0b", "a\u2028b", "a\u00adb"} {
		p := url.PathEscape(id)
		if r := s.do("POST", "/v1/locks/"+p+"/acquire", map[string]any{"holder": "h"}); r.Status != 400 {
			t.Fatalf("acquire %q: %d %s", id, r.Status, r.Raw)
		}
		if r := s.do("POST", "/v1/fence/"+p, nil, "X-Fencing-Token", "1"); r.Status != 400 {
			t.Fatalf("fence %q: %d %s", id, r.Status, r.Raw)
		}
		if r := report(s, map[string]any{"resourceId": id, "token": 1, "accepted": true, "source": "p"}); r.Status != 400 {
			t.Fatalf("report %q: %d %s", id, r.Status, r.Raw)
		}
		if r := s.do("POST", "/v1/locks/ok/acquire", map[string]any{"holder": id}); r.Status != 400 {
			t.Fatalf("holder %q: %d %s", id, r.Status, r.Raw)
		}
	}
	if r := s.do("GET", "/v1/resources", nil); !strings.Contains(string(r.Raw), `"resources":[]`) {
		t.Fatalf("refused ids were recorded: %s", r.Raw)
	}
	s.acquire("caf\u00e9/\u0448\u0430\u0440\u0434-\u0661", "\u05d0\u05d1", 1000) // other scripts, right-to-left ones included
}
