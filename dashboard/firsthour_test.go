package dashboard

import (
	"context"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/auth"
)

func histogram(count uint64, sum float64, bounds []float64, cumulative []uint64) *dto.Histogram {
	h := &dto.Histogram{SampleCount: proto.Uint64(count), SampleSum: proto.Float64(sum)}
	for i, b := range bounds {
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(b), CumulativeCount: proto.Uint64(cumulative[i])})
	}
	return h
}

// A commit has at least one change: the quantiles of a count histogram are
// whole numbers inside their bucket, and a rank past the last bound says so.
func TestQuantilesOfCounts(t *testing.T) {
	bounds := []float64{1, 2, 4, 8}
	for _, c := range []struct {
		h    *dto.Histogram
		want string
	}{
		// 74 commits of one change and a few of two: the line read "p50 0.6".
		{histogram(80, 86, bounds, []uint64{74, 80, 80, 80}), "80 observed, mean 1.1, p50 1, p99 2"},
		// Interpolated 2.5 in (2, 4]: 3, not 2.5.
		{histogram(4, 12, bounds, []uint64{0, 0, 4, 4}), "4 observed, mean 3.0, p50 3, p99 4"},
		// Beyond the last bound: only known to exceed it.
		{histogram(10, 200, bounds, []uint64{0, 0, 0, 1}), "10 observed, mean 20.0, p50 > 8.0, p99 > 8.0"},
	} {
		if got := histogramText(c.h, false); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
	// Seconds keep Prometheus' interpolation, in units.
	if got := histogramText(histogram(2, 0.003, []float64{0.001, 0.002}, []uint64{1, 2}), true); got != "2 observed, mean 1.5 ms, p50 1.0 ms, p99 2.0 ms" {
		t.Errorf("seconds: %q", got)
	}
}

// No value on the metrics page is in e-notation.
func TestMetricValuesReadPlainly(t *testing.T) {
	for _, c := range []struct {
		name string
		v    float64
		want string
	}{
		{"process_network_receive_bytes_total", 4.6338925e+08, "463,389,250 (441.9 MiB)"},
		{"process_virtual_memory_max_bytes", 1.8446744073709552e+19, "no limit"},
		{"process_start_time_seconds", 1796109600.25, "1,796,109,600"},
		{"fenceview_grants_total", 44, "44"},
		{"process_cpu_seconds_total", 0.14, "0.14"},
		{"x", 8.9814e-05, "0.000089814"},
	} {
		if got := valueText(c.name, c.v); got != c.want {
			t.Errorf("%s %v: %q, want %q", c.name, c.v, got, c.want)
		}
	}
	// A time in Unix seconds is also the instant, which the page shows in
	// the viewer's zone.
	if at := valueTime("process_start_time_seconds", 1796109600.25); !at.Equal(time.Date(2026, 12, 1, 7, 20, 0, 0, time.UTC)) {
		t.Errorf("start time %v", at)
	}
	if at := valueTime("fenceview_grants_total", 44); !at.IsZero() {
		t.Errorf("a count read as a time: %v", at)
	}
}

// Tokens near 2^63 cannot wrap the chart's axis (which once looped on
// them) and each tick is below the next.
func TestChartNearTheLargestToken(t *testing.T) {
	at := t0
	events := []fenceview.Event{
		{Seq: 2, Type: fenceview.EventAccept, Token: math.MaxInt64, At: at.Add(time.Second)},
		{Seq: 1, Type: fenceview.EventGrant, Token: math.MaxInt64 - 3, At: at},
	}
	c := newChart(events, nil, fenceview.Resource{LastToken: math.MaxInt64})
	if len(c.YTicks) < 2 || len(c.YTicks) > 8 {
		t.Fatalf("%d ticks", len(c.YTicks))
	}
	for i := 1; i < len(c.YTicks); i++ {
		if c.YTicks[i].Pos >= c.YTicks[i-1].Pos {
			t.Fatalf("ticks out of order: %+v", c.YTicks)
		}
	}
	// The widest label gets its room.
	if c.Left < 34+8*19 {
		t.Fatalf("left margin %.0f for 19-digit labels", c.Left)
	}
	// Grants are drawn last, over the writes.
	if c.Marks[len(c.Marks)-1].Kind != fenceview.EventGrant {
		t.Fatalf("marks in order %v", c.Marks)
	}
}

// The chart's step line follows the issuer: a claim above the last token
// issued raises the alarm, not the mark, so it ends at the Lock card's.
func TestChartMarkIsTheResourcesMark(t *testing.T) {
	events := []fenceview.Event{
		{Seq: 3, Type: fenceview.EventReject, Presented: 4, Required: 10, At: t0.Add(2 * time.Second)},
		{Seq: 2, Type: fenceview.EventAccept, Token: 4, At: t0.Add(time.Second)},
		{Seq: 1, Type: fenceview.EventGrant, Token: 4, At: t0},
	}
	c := newChart(events, nil, fenceview.Resource{LastToken: 4, HighWaterMark: 4, CounterAlarm: 10})
	if strings.Count(c.HWM, "V") != 0 {
		t.Fatalf("the mark rose to the alarm's claim: %s", c.HWM)
	}
}

// Sources carry the key's name, the recorded source on hover; a key
// limited to some prefixes learns only its own key's name.
func TestSourcesByKeyName(t *testing.T) {
	e := newEnv(t)
	e.h.Keys = keyList{{ID: "ec3bf8bb806d42f1", Name: "billing"}, {ID: "0123456789abcdef", Name: "team-b-payroll"}}
	e.staleWrite("orders", "key:ec3bf8bb806d42f1/replica")
	get := func(p *auth.Principal, path string) page {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", path, nil)
		req = req.WithContext(auth.NewContext(req.Context(), p))
		e.mux.ServeHTTP(rec, req)
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(rec.Body.String()))
		if err != nil {
			t.Fatal(err)
		}
		return page{status: rec.Code, body: rec.Body.String(), doc: doc}
	}
	admin := &auth.Principal{KeyID: "admin", Name: "admin token", Role: auth.Admin}
	p := get(admin, "/rejections")
	cell := p.find("rejection-source").First()
	if cell.Text() != "billing/replica" || cell.AttrOr("title", "") != "key:ec3bf8bb806d42f1/replica" {
		t.Fatalf("source cell %q title %q", cell.Text(), cell.AttrOr("title", ""))
	}
	if who := p.find("who"); who.Text() != "admin token" || who.AttrOr("title", "") != "the admin token" {
		t.Fatalf("who: %q %q", who.Text(), who.AttrOr("title", ""))
	}
	limited := &auth.Principal{KeyID: "ec3bf8bb806d42f1", Name: "billing", Role: auth.Viewer, Resources: []string{"orders"}}
	p = get(limited, "/")
	if strings.Contains(p.body, "team-b-payroll") {
		t.Fatal("a limited key's page names another team's key")
	}
	if p.doc.Find(`header nav a[href="/status"]`).Length() != 0 {
		t.Fatal("a limited key is offered the metrics page")
	}
	if names := p.doc.Find("body").AttrOr("data-key-names", ""); names != `{"ec3bf8bb806d42f1":"billing"}` {
		t.Fatalf("names for the script: %s", names)
	}
}

type keyList []auth.Key

func (k keyList) List() []auth.Key { return k }

// A holder's history is its own events, newest first, read from a bounded
// window of the newest events.
func TestHolderHistoryIsBounded(t *testing.T) {
	e := newEnv(t)
	e.acquire("a", "w7", time.Second)
	e.clock.Advance(2 * time.Second)
	e.acquire("b", "other", time.Hour)
	e.acquire("a", "other", time.Hour) // expires w7's lease first
	ctx := context.Background()
	got, err := e.db.HolderEvents(ctx, "w7", nil, 100, 10)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, ev := range got {
		kinds = append(kinds, ev.Type+" "+ev.ResourceID)
	}
	if strings.Join(kinds, ", ") != "expire a, grant a" {
		t.Fatalf("w7's history: %v", kinds)
	}
	// Outside the scanned window: not read.
	if got, err := e.db.HolderEvents(ctx, "w7", nil, 1, 10); err != nil || len(got) != 0 {
		t.Fatalf("scan of the newest event only: %v %v", got, err)
	}
	if got, err := e.db.HolderEvents(ctx, "w7", []string{"zzz"}, 100, 10); err != nil || len(got) != 0 {
		t.Fatalf("prefix filter: %v %v", got, err)
	}
	p := e.get("/holders/w7")
	if n := p.find("holder-history-row").Length(); n != 2 {
		t.Fatalf("%d history rows on the holder page", n)
	}
}
