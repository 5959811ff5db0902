package dashboard

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/wire"
)

// The dashboard agrees with itself: one rate window, times for the
// viewer's zone, the mark's step line by the issuer's rule, numbers
// labelled and in one format, no empty tables, one badge per refusal and
// the alarm's claimed mark in the log. The browser's side of these is in
// cmd/fenceview/agrees_browser_test.go.

// The cards, the metrics page and the chart count the same complete
// minutes: the minute under way is in none of them, so nothing dips while
// it runs, and every card says which minutes it counts.
func TestOneRateWindow(t *testing.T) {
	e := newEnv(t)
	minute := t0.Truncate(time.Minute).Add(time.Minute)
	e.clock.Advance(minute.Sub(t0))
	for range 30 { // 30 grants in one minute
		e.acquire("busy", "w", time.Second)
		e.svc.Release(context.Background(), "busy", "w")
		e.clock.Advance(1900 * time.Millisecond)
	}
	e.clock.Advance(minute.Add(time.Minute + 40*time.Second).Sub(e.clock.Now()))
	for range 10 { // the minute under way: 10 so far
		e.acquire("busy", "w", time.Second)
		e.svc.Release(context.Background(), "busy", "w")
	}
	end := minute.Add(time.Minute) // the start of the minute under way

	p := e.get("/")
	if got := p.find("rate-grants").Text(); got != "6.0" { // 30 in the 5 complete minutes
		t.Errorf("grants per minute %q, want 6.0 (30 over the last 5 complete minutes)", got)
	}
	windows := p.find("rates").Find(`.stat [data-testid="rate-window"]`)
	if windows.Length() != 3 {
		t.Fatalf("%d of the 3 rate cards say their window", windows.Length())
	}
	windows.Each(func(_ int, w *goquery.Selection) {
		times := w.Find("time")
		if times.Length() != 2 || times.Eq(0).AttrOr("datetime", "") != wire.FormatTime(end.Add(-5*time.Minute)) ||
			times.Eq(1).AttrOr("datetime", "") != wire.FormatTime(end) || !strings.Contains(w.Text(), "the last 5 complete minutes") {
			t.Errorf("a card's window: %q", strings.Join(strings.Fields(w.Text()), " "))
		}
	})
	// The chart ends where the cards end, its last point the last complete
	// minute (30), not the minute under way (10 so far).
	if got := p.find("rate-xtick").Last().AttrOr("data-datetime", ""); got != wire.FormatTime(end) {
		t.Errorf("the chart's axis ends at %q, want %s", got, wire.FormatTime(end))
	}
	if got := p.find("rate-chart-window").Find("time").AttrOr("datetime", ""); got != wire.FormatTime(end) {
		t.Errorf("the chart's legend names %q as its end", got)
	}
	pts := strings.Fields(p.doc.Find(".rate-chart .line-grants").AttrOr("points", ""))
	if len(pts) != 60 {
		t.Fatalf("%d points in the hour", len(pts))
	}
	lastX, lastY := point(t, pts[len(pts)-1])
	_, topY := point(t, pts[0])
	for _, pt := range pts {
		_, y := point(t, pt)
		topY = min(topY, y)
	}
	if lastY != topY || lastX != rateRight {
		t.Errorf("the last point is %s, want the busiest minute (y %.1f) at the right edge (x %.1f)", pts[len(pts)-1], topY, rateRight)
	}
	// The metrics page shows the same window, labelled the same way.
	m := e.get("/status")
	rates := m.doc.Find(`[data-field="rates"]`)
	if got := strings.Join(strings.Fields(rates.Text()), " "); !strings.HasPrefix(got, "6.0 grants, 0.0 accepted, 0.0 refused over the last 5 complete minutes") {
		t.Errorf("metrics page rates: %q", got)
	}
	if rates.Find("time").Last().AttrOr("datetime", "") != wire.FormatTime(end) {
		t.Error("the metrics page's rates end elsewhere")
	}
}

func point(t *testing.T, pt string) (x, y float64) {
	t.Helper()
	xs, ys, _ := strings.Cut(pt, ",")
	x, err1 := strconv.ParseFloat(xs, 64)
	y, err2 := strconv.ParseFloat(ys, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("point %q", pt)
	}
	return x, y
}

var rfc3339UTC = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)

// Every time a page shows, axis labels included, is in the HTML as UTC
// RFC 3339 with a mode, for the script to show in the viewer's zone.
func TestTimesAreUTCForTheViewersZone(t *testing.T) {
	e := newEnv(t)
	tok := e.acquire("r", "w", time.Minute)
	e.clock.Advance(5 * time.Second)
	e.fence("r", tok, "api")
	e.clock.Advance(time.Minute)
	for _, path := range []string{"/", "/resources/r", "/status", "/holders/w"} {
		p := e.get(path)
		n := 0
		p.doc.Find("time, text[data-datetime]").Each(func(_ int, s *goquery.Selection) {
			n++
			at := s.AttrOr("datetime", s.AttrOr("data-datetime", ""))
			if !rfc3339UTC.MatchString(at) || s.AttrOr("data-local", "") == "" {
				t.Errorf("%s: %s %q with datetime %q, mode %q", path, goquery.NodeName(s), s.Text(), at, s.AttrOr("data-local", ""))
			}
		})
		if n == 0 {
			t.Errorf("%s shows no time", path)
		}
	}
	// The token chart's axis: each label an instant of the chart.
	ticks := e.get("/resources/r").find("chart-xtick")
	if ticks.Length() < 2 || ticks.First().AttrOr("data-datetime", "") != wire.FormatTime(t0) || ticks.First().AttrOr("data-local", "") != "clock" {
		t.Fatalf("the chart's time axis: %d ticks, first %q", ticks.Length(), ticks.First().AttrOr("data-datetime", ""))
	}
}

// fenceWith presents f to the server's own fence.
func (e *env) fenceWith(f fenceview.Fence) guard.Decision {
	e.t.Helper()
	d, err := e.svc.Fence(context.Background(), f)
	if err != nil {
		e.t.Fatalf("fence %+v: %v", f, err)
	}
	return d
}

// The step line rises where the mark rose, at accepted writes, and after
// no refusal of the server's own fence, whatever its reason: a superseded
// refusal names the last token issued, not a mark, and once raised the
// line to it.
func TestStepLineAfterEveryRefusal(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	step := func() { e.clock.Advance(time.Second) }
	e.acquire("r", "a", time.Minute) // 1
	e.svc.Release(ctx, "r", "a")
	step()
	t2 := e.acquire("r", "a", time.Minute)
	e.fence("r", t2, "api") // the mark: 2
	e.svc.Release(ctx, "r", "a")
	step()
	t3 := e.acquire("r", "b", time.Minute) // last issued: 3
	for _, c := range []struct {
		f      fenceview.Fence
		reason string
	}{
		{fenceview.Fence{Token: guard.Token{Token: 1}}, guard.ReasonStale},
		{fenceview.Fence{Token: guard.Token{Token: t2}, Mode: fenceview.FenceModeCurrent}, guard.ReasonSuperseded},
		{fenceview.Fence{Token: guard.Token{Token: 9}}, guard.ReasonUnissued},
		{fenceview.Fence{Token: guard.Token{Token: t3, Issuer: "another"}}, guard.ReasonForeignIssuer},
		{fenceview.Fence{Token: guard.Token{Token: t3, Scope: "resource:elsewhere"}}, guard.ReasonScopeMismatch},
	} {
		step()
		c.f.ResourceID = "r"
		if d := e.fenceWith(c.f); d.Accepted || d.Reason != c.reason {
			t.Fatalf("want %s: %+v", c.reason, d)
		}
	}
	step()
	e.fence("r", t3, "api") // the mark: 3
	p := e.get("/resources/r")
	if got := p.find("lock-state").Find(`[data-field="hwm"]`).Text(); got != "3" {
		t.Fatalf("the Lock card's mark %q", got)
	}
	accepts := p.find("chart-accept")
	if accepts.Length() != 2 || p.find("chart-reject").Length() != 5 {
		t.Fatalf("%d accepts and %d refusals drawn", accepts.Length(), p.find("chart-reject").Length())
	}
	x2, y2 := markAt(t, accepts.Eq(0))
	x3, y3 := markAt(t, accepts.Eq(1))
	want := "M" + ftoa(x2) + " " + ftoa(y2) + " H" + ftoa(x3) + " V" + ftoa(y3) + " H" + ftoa(744)
	if got := p.find("chart-hwm").AttrOr("d", ""); got != want {
		t.Errorf("step line %q, want %q: from the first accept at 2, up at the second to 3, nowhere else", got, want)
	}
}

// markAt is where a chart mark is drawn: its translate(x y).
func markAt(t *testing.T, s *goquery.Selection) (x, y float64) {
	t.Helper()
	tr := s.AttrOr("transform", "")
	inner, ok := strings.CutPrefix(strings.TrimSuffix(tr, ")"), "translate(")
	xs, ys, _ := strings.Cut(inner, " ")
	if !ok {
		t.Fatalf("transform %q", tr)
	}
	return point(t, xs+","+ys)
}

// The same rule on a history the server's fence cannot make (a bad
// signature needs keys): refusals of every reason naming the mark they
// met, then an accept; and a superseded refusal naming the last token
// issued, above the mark.
func TestStepLineRuleForEveryReason(t *testing.T) {
	reasons := []string{guard.ReasonStale, guard.ReasonSuperseded, guard.ReasonBadSignature, guard.ReasonUnissued, guard.ReasonForeignIssuer, guard.ReasonScopeMismatch}
	var events []fenceview.Event // oldest first, reversed below
	at := t0
	add := func(e fenceview.Event) {
		at = at.Add(time.Second)
		e.At, e.Seq = at, int64(len(events)+1)
		events = append(events, e)
	}
	add(fenceview.Event{Type: fenceview.EventGrant, Token: 5, Holder: "a"})
	add(fenceview.Event{Type: fenceview.EventAccept, Token: 5})
	add(fenceview.Event{Type: fenceview.EventGrant, Token: 6, Holder: "b"})
	for _, r := range reasons {
		required := int64(5)
		if r == guard.ReasonSuperseded {
			required = 6 // the last token issued
		}
		add(fenceview.Event{Type: fenceview.EventReject, Reason: r, Presented: 4, Required: required})
	}
	add(fenceview.Event{Type: fenceview.EventAccept, Token: 6})
	newest := make([]fenceview.Event, len(events))
	for i, e := range events {
		newest[len(events)-1-i] = e
	}
	c := newChart(newest, nil, fenceview.Resource{HighWaterMark: 6, LastToken: 6})
	var accepts []Mark
	for _, m := range c.Marks {
		if m.Kind == fenceview.EventAccept {
			accepts = append(accepts, m)
		}
	}
	if len(accepts) != 2 {
		t.Fatalf("%d accepts", len(accepts))
	}
	want := "M" + ftoa(accepts[0].X) + " " + ftoa(accepts[0].Y) + " H" + ftoa(accepts[1].X) + " V" + ftoa(accepts[1].Y) + " H" + ftoa(c.Right)
	if c.HWM != want {
		t.Errorf("step line %q, want %q", c.HWM, want)
	}
}

// Counts and tokens read one way everywhere, grouped by thousands, on the
// server and in the script's words; the sparkline's number says what it
// counts.
func TestNumbersReadOneWay(t *testing.T) {
	e := newEnv(t)
	// Tokens from elsewhere: a mark of 12345 on an id this server never
	// issued for.
	if _, err := e.svc.Report(context.Background(), []fenceview.Report{{ResourceID: "big", Token: 12345, Accepted: true, Source: "db", At: e.clock.Now()}}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	p := e.get("/")
	row := p.doc.Find(`[data-testid="resource-row"][data-resource="big"]`)
	if got := strings.TrimSpace(row.Find(`[data-col="hwm"]`).Text()); got != "12,345" {
		t.Errorf("the row's mark reads %q", got)
	}
	if got := row.Find(`[data-testid="spark-n"]`).Text(); got != "1 event" {
		t.Errorf("the sparkline's number reads %q, want it labelled", got)
	}
	if got := p.find("feed-item").First().Find(".detail").Text(); got != "token 12,345 accepted from db" {
		t.Errorf("the feed reads %q", got)
	}
	r := e.get("/resources/big")
	if got := r.find("lock-state").Find(`[data-field="hwm"]`).Text(); got != "12,345" {
		t.Errorf("the Lock card's mark reads %q", got)
	}
	grouped := regexp.MustCompile(`^\d{1,3}(,\d{3})+$`)
	r.doc.Find(`[data-testid="chart"] text.axis:not([data-datetime])`).Each(func(_ int, s *goquery.Selection) {
		if s.Text() != "token" && !grouped.MatchString(s.Text()) {
			t.Errorf("the chart's token axis reads %q", s.Text())
		}
	})
	for _, want := range []struct {
		n int64
		s string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {1234567, "1,234,567"}, {9223372036854775807, "9,223,372,036,854,775,807"}} {
		if got := group(want.n); got != want.s {
			t.Errorf("group(%d) = %q", want.n, got)
		}
	}
	for _, want := range []struct {
		f float64
		s string
	}{{0, "0.0"}, {0.02, "< 0.1"}, {0.06, "0.1"}, {6, "6.0"}, {54, "54.0"}, {1234.56, "1,234.6"}} {
		if got := rate(want.f); got != want.s {
			t.Errorf("rate(%v) = %q, want %q", want.f, got, want.s)
		}
	}
}

// No table stands empty under its header: a page with nothing to list
// says so in a sentence, and every column header has a name.
func TestNoEmptyTables(t *testing.T) {
	e := newEnv(t)
	tok := e.acquire("r", "w", time.Minute)
	e.fence("r", tok, "api")
	e.svc.Release(context.Background(), "r", "w")
	for _, c := range []struct{ path, sentence string }{
		{"/holders/nobody", "holder-count"},
		{"/rejections", "no-rejections"},
		{"/rejections?reason=superseded", "no-rejections"},
		{"/resources/r", ""},
		{"/holders/w", ""},
	} {
		p := e.get(c.path)
		p.doc.Find("table").Each(func(_ int, tb *goquery.Selection) {
			if _, hidden := tb.Attr("hidden"); !hidden && tb.Find("tbody tr").Length() == 0 {
				t.Errorf("%s: table %q shows a header over no rows", c.path, tb.AttrOr("data-testid", tb.AttrOr("class", "")))
			}
		})
		p.doc.Find("th").Each(func(_ int, th *goquery.Selection) {
			if strings.TrimSpace(th.Text()) == "" {
				t.Errorf("%s: an empty header in %q", c.path, th.Closest("table").AttrOr("class", ""))
			}
		})
		if c.sentence != "" && strings.TrimSpace(p.find(c.sentence).Text()) == "" {
			t.Errorf("%s: no sentence says there is nothing", c.path)
		}
	}
	if got := e.get("/holders/nobody").find("holder-count").Text(); got != "No lock held now." {
		t.Errorf("holder page: %q", got)
	}
	// An empty overview: its table waits hidden for the script's first row.
	empty := newEnv(t).get("/")
	if _, hidden := empty.find("resources").Attr("hidden"); !hidden || empty.find("no-resources").Length() != 1 {
		t.Error("the empty overview shows the resource table's header")
	}
}

// A refusal's reason shows once: the rejections table's reason column has
// one badge, with the reason's name, not "stale" beside "stale-token".
func TestOneBadgePerRefusal(t *testing.T) {
	e := newEnv(t)
	e.staleWrite("r", "api")
	p := e.get("/rejections")
	rows := p.find("rejection-row")
	if rows.Length() != 1 {
		t.Fatalf("%d rows", rows.Length())
	}
	cell := rows.First().Find("td").Eq(2) // When, Resource, Reason
	if n := cell.Find(".badge").Length(); n != 1 {
		t.Errorf("%d badges in the reason cell", n)
	}
	if got := strings.TrimSpace(cell.Text()); got != "stale-token" {
		t.Errorf("the reason cell reads %q", got)
	}
}

// The counter alarm in the log reads as on the banner: the claimed mark
// (the alarm event's token) beside the last token issued (its required).
func TestAlarmLogShowsTheClaimedMark(t *testing.T) {
	e := newEnv(t)
	for range 4 {
		e.acquire("inv", "a", time.Second)
		e.clock.Advance(2 * time.Second)
	}
	if _, err := e.svc.Report(context.Background(), []fenceview.Report{{ResourceID: "inv", Token: 10, Accepted: true, Source: "db", At: e.clock.Now()}}); err != nil {
		t.Fatal(err)
	}
	want := "token 10 in use at a guard, last token issued 4"
	p := e.get("/")
	if got := strings.TrimSpace(p.doc.Find(`[data-testid="banner-behind"] li[data-resource="inv"]`).Text()); got != "inv: "+want {
		t.Errorf("banner: %q", got)
	}
	alarm := p.doc.Find(`[data-testid="feed-item"][data-type="alarm"] .detail`).Text()
	if alarm != want+" (counter-behind) from db" {
		t.Errorf("the feed's alarm: %q", alarm)
	}
	r := e.get("/resources/inv")
	if got := r.doc.Find(`[data-testid="history-row"][data-type="alarm"] .detail`).Text(); got != alarm {
		t.Errorf("the history's alarm: %q", got)
	}
	if got := r.find("lock-state").Find(`[data-field="alarm"]`).Text(); got != want {
		t.Errorf("the Lock card's alarm: %q", got)
	}
}

// A resource busier than the sparkline reads is counted from its newest
// events: its number says "at least" instead of a count that looks whole.
func TestSparklineSaysWhenItCountsPart(t *testing.T) {
	e := newEnv(t)
	for range sparkRead { // 2 events each: a grant and a release
		e.acquire("busy", "w", time.Minute)
		e.svc.Release(context.Background(), "busy", "w")
		e.clock.Advance(100 * time.Millisecond)
	}
	e.acquire("calm", "w", time.Minute)
	e.clock.Advance(time.Minute)
	p := e.get("/")
	count := func(id string) string {
		return p.doc.Find(`[data-testid="resource-row"][data-resource="` + id + `"] [data-testid="spark-n"]`).Text()
	}
	if got := count("busy"); got != "≥ 200 events" {
		t.Errorf("the busy resource's sparkline reads %q", got)
	}
	if got := count("calm"); got != "1 event" {
		t.Errorf("the calm resource's sparkline reads %q", got)
	}
}

// A foreign-mark alarm: the first grant went above a mark set elsewhere.
// The banner keeps it until a reset, and does not call the issuer behind
// a mark it has passed; the log says what happened.
func TestForeignMarkAlarmInWords(t *testing.T) {
	e := newEnv(t)
	if _, err := e.svc.Report(context.Background(), []fenceview.Report{{ResourceID: "fm", Token: 7, Accepted: true, Source: "db", At: e.clock.Now()}}); err != nil {
		t.Fatal(err)
	}
	e.acquire("fm", "x", time.Minute) // token 8
	p := e.get("/")
	if got := strings.TrimSpace(p.doc.Find(`[data-testid="banner-behind"] li[data-resource="fm"]`).Text()); got != "fm: token 7 was in use at a guard above the token counter, last token issued 8" {
		t.Errorf("banner: %q", got)
	}
	if got := p.doc.Find(`[data-testid="feed-item"][data-type="alarm"] .detail`).Text(); got != "token 7 in use at a guard before this server issued any; its first token goes above it (foreign-mark)" {
		t.Errorf("the feed's alarm: %q", got)
	}
}
