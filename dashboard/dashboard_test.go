package dashboard

import (
	"context"
	"encoding/csv"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/clock"
	"github.com/fenceview/fenceview/internal/issuer"
	"github.com/fenceview/fenceview/internal/sqlite"
)

var t0 = clock.TestDate

// env is the dashboard over a real issuer and SQLite file, on a fake clock.
type env struct {
	t     *testing.T
	svc   *issuer.Service
	db    *sqlite.DB
	clock *clock.Fake
	h     *Handler
	mux   *http.ServeMux
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "fenceview.db"))
	if err != nil {
		t.Fatal(err)
	}
	fc := clock.NewFake(t0)
	svc, err := issuer.Open(context.Background(), db, issuer.Config{Issuer: "test", Clock: fc, SweepInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(); db.Close() })
	h := New(svc, svc, db, fc.Now)
	mux := http.NewServeMux()
	h.Register(mux)
	return &env{t: t, svc: svc, db: db, clock: fc, h: h, mux: mux}
}

func (e *env) acquire(id, holder string, lease time.Duration) int64 {
	e.t.Helper()
	g, err := e.svc.Acquire(context.Background(), fenceview.AcquireRequest{ResourceID: id, Holder: holder, Lease: lease, Wait: 0})
	if err != nil {
		e.t.Fatalf("acquire %q: %v", id, err)
	}
	return g.Fencing.Token
}

func (e *env) fence(id string, token int64, source string) guard.Decision {
	e.t.Helper()
	d, err := e.svc.Fence(context.Background(), fenceview.Fence{ResourceID: id, Token: guard.Token{Token: token}, Source: source})
	if err != nil {
		e.t.Fatalf("fence %q: %v", id, err)
	}
	return d
}

// staleWrite makes a stale-token rejection on id from each of sources, in
// order.
func (e *env) staleWrite(id string, sources ...string) {
	e.t.Helper()
	for _, source := range sources {
		e.clock.Advance(time.Minute) // any lease on id has run out
		old := e.acquire(id, "old-"+source, time.Second)
		e.clock.Advance(2 * time.Second)
		fresh := e.acquire(id, "new-"+source, time.Second)
		e.fence(id, fresh, source)
		if d := e.fence(id, old, source); d.Accepted || d.Reason != guard.ReasonStale {
			e.t.Fatalf("stale write accepted: %+v", d)
		}
	}
}

type page struct {
	status int
	header http.Header
	body   string
	doc    *goquery.Document
}

func (e *env) get(path string) page {
	e.t.Helper()
	rec := httptest.NewRecorder()
	e.mux.ServeHTTP(rec, asOpen(httptest.NewRequest("GET", path, nil)))
	p := page{status: rec.Code, header: rec.Header(), body: rec.Body.String()}
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(p.body))
		if err != nil {
			e.t.Fatal(err)
		}
		p.doc = doc
	}
	return p
}

// asOpen is r as the API hands it over with auth off: acting as the open
// principal (the dashboard alone, without the API, knows nobody).
func asOpen(r *http.Request) *http.Request {
	return r.WithContext(auth.NewContext(r.Context(), auth.Open))
}

func (p page) find(testid string) *goquery.Selection {
	return p.doc.Find(`[data-testid="` + testid + `"]`)
}

var hostile = []string{"<script>alert(1)</script>", "a/b", "with space", "заказ:42", `"quoted" & 'single'`}

// Ids are text wherever they appear, and links carry them as one escaped
// path segment.
func TestOverviewEscapesHostileIDs(t *testing.T) {
	e := newEnv(t)
	for _, id := range hostile {
		tok := e.acquire(id, "<b>holder</b>", 30*time.Second)
		e.fence(id, tok, "api:10.0.0.9") // sources have a markup-free charset (fenceview.ValidateSource)
	}
	p := e.get("/")
	if p.status != 200 {
		t.Fatalf("status %d", p.status)
	}
	if strings.Contains(p.body, "<script>alert") || strings.Contains(p.body, "<img src=x") || strings.Contains(p.body, "<b>holder") {
		t.Fatal("client-supplied text reached the page unescaped")
	}
	if n := p.doc.Find("script").Length(); n != 1 {
		t.Fatalf("%d script elements, want only app.js", n)
	}
	if src, _ := p.doc.Find("script").Attr("src"); !strings.HasPrefix(src, "/static/app.js?v=") {
		t.Fatalf("script src %q", src)
	}
	rows := p.find("resource-row")
	if rows.Length() != len(hostile) {
		t.Fatalf("%d resource rows, want %d", rows.Length(), len(hostile))
	}
	seen := map[string]bool{}
	rows.Each(func(_ int, row *goquery.Selection) {
		id := row.AttrOr("data-resource", "")
		link := row.Find(`[data-testid="resource-link"]`)
		if link.Text() != id {
			t.Errorf("link text %q, row id %q", link.Text(), id)
		}
		if href := link.AttrOr("href", ""); href != "/resources/"+url.PathEscape(id) {
			t.Errorf("href of %q = %q", id, href)
		}
		if got := strings.TrimSpace(row.Find(`[data-col="holder"]`).Text()); got != "<b>holder</b>" {
			t.Errorf("holder cell %q", got)
		}
		seen[id] = true
	})
	for _, id := range hostile {
		if !seen[id] {
			t.Errorf("no row for %q", id)
		}
	}
	// Feed: every grant and accept, newest first, as text.
	items := p.find("feed-item")
	if items.Length() != 2*len(hostile) {
		t.Fatalf("%d feed items, want %d", items.Length(), 2*len(hostile))
	}
	first := items.First()
	if first.AttrOr("data-type", "") != "accept" || first.Find("a.res").Text() != hostile[len(hostile)-1] ||
		!strings.Contains(first.Find(".detail").Text(), "from api:10.0.0.9") {
		t.Fatalf("newest feed item: %q", first.Text())
	}
	if p.header.Get("Content-Security-Policy") == "" {
		t.Fatal("no content security policy")
	}
}

func TestOverviewFacts(t *testing.T) {
	e := newEnv(t)
	tok := e.acquire("orders", "client-a", 30*time.Second)
	e.fence("orders", tok, "api")
	e.acquire("free-one", "x", time.Second)
	e.svc.Release(context.Background(), "free-one", "x")
	e.clock.Advance(10 * time.Second)

	p := e.get("/")
	if got := p.doc.Find("body").AttrOr("data-last-seq", ""); got != strconv.FormatInt(e.svc.LastSeq(), 10) {
		t.Fatalf("data-last-seq %q, service at %d", got, e.svc.LastSeq())
	}
	var orders, free *goquery.Selection
	p.find("resource-row").Each(func(_ int, s *goquery.Selection) {
		switch s.AttrOr("data-resource", "") {
		case "orders":
			orders = s
		case "free-one":
			free = s
		}
	})
	cell := func(row *goquery.Selection, col string) string {
		return strings.TrimSpace(row.Find(`[data-col="` + col + `"]`).Text())
	}
	if cell(orders, "hwm") != "1" || cell(orders, "last") != "1" || cell(orders, "holder") != "client-a" ||
		cell(orders, "accepted") != "1" || cell(orders, "rejected") != "0" {
		t.Fatalf("orders row: %q", orders.Text())
	}
	if ms := orders.Find(".countdown").AttrOr("data-remaining-ms", ""); ms != "20000" {
		t.Fatalf("remaining %q, want 20000 (30 s lease, 10 s later)", ms)
	}
	if cell(free, "holder") != "free" || free.Find(".countdown").Length() != 0 {
		t.Fatalf("free row: %q", free.Text())
	}
	if got := strings.Join(strings.Fields(p.find("table-count").Text()), " "); got != "2 resources · 1 lock held of 2" {
		t.Fatalf("table count: %q", got)
	}
	// The rates count complete minutes only: the one under way, which has
	// every event so far, counts once it is over (TestOneRateWindow).
	if p.find("rate-grants").Text() != "0.0" || p.find("rate-accepted").Text() != "0.0" || p.find("rate-refused").Text() != "0.0" {
		t.Fatalf("rates: %q %q %q", p.find("rate-grants").Text(), p.find("rate-accepted").Text(), p.find("rate-refused").Text())
	}
	// Each event's word is there beside its shape.
	for _, want := range []string{"granted", "released", "accepted"} {
		if p.doc.Find(".feed .badge:contains('"+want+"') svg").Length() == 0 {
			t.Errorf("no %q badge with an icon in the feed", want)
		}
	}
	if n := p.doc.Find(".feed time[datetime][title]").Length(); n != p.find("feed-item").Length() {
		t.Fatalf("%d feed times with datetime and title", n)
	}
	if dt := p.doc.Find(".feed time").First().AttrOr("datetime", ""); dt != "2026-09-24T06:14:22.000Z" {
		t.Fatalf("datetime %q", dt)
	}
}

func TestWarnings(t *testing.T) {
	e := newEnv(t)
	e.acquire("fine", "a", time.Minute)
	p := e.get("/")
	if _, hidden := p.find("banner-behind").Attr("hidden"); !hidden {
		t.Fatal("behind warning shown with nothing behind")
	}
	if _, hidden := p.find("banner-burst").Attr("hidden"); !hidden {
		t.Fatal("burst warning shown with no stale writes")
	}
	if _, hidden := p.find("banner-connection").Attr("hidden"); !hidden {
		t.Fatal("connection warning must start hidden")
	}

	// A guard accepted a token this issuer never reached.
	e.acquire("restored", "a", time.Minute)
	if _, err := e.svc.Report(context.Background(), []fenceview.Report{
		{ResourceID: "restored", Token: 40, Accepted: true, Source: "plugin"},
	}); err != nil {
		t.Fatal(err)
	}
	// A client keeps writing with its old token, all within the window.
	old := e.acquire("hot", "a", time.Second)
	e.clock.Advance(2 * time.Second)
	e.fence("hot", e.acquire("hot", "b", time.Hour), "b")
	staleOnce := func() {
		if d := e.fence("hot", old, "a"); d.Reason != guard.ReasonStale {
			t.Fatalf("not a stale write: %+v", d)
		}
	}
	for i := 0; i < e.h.BurstThreshold-1; i++ {
		staleOnce()
	}
	p = e.get("/")
	banner := p.find("banner-behind")
	if _, hidden := banner.Attr("hidden"); hidden || banner.Find(`li[data-resource="restored"]`).Length() != 1 ||
		!strings.Contains(banner.Text(), "token 40 in use at a guard, last token issued 1") {
		t.Fatalf("behind warning: hidden=%v %q", hidden, banner.Text())
	}
	if _, hidden := p.find("banner-burst").Attr("hidden"); !hidden {
		t.Fatal("burst warning below the threshold")
	}
	if p.doc.Find(`tr.is-behind[data-resource="restored"] .tag`).Text() != "behind" {
		t.Fatal("behind resource's row has no 'behind' tag")
	}

	staleOnce()
	p = e.get("/rejections") // every page carries the warnings
	if _, hidden := p.find("banner-burst").Attr("hidden"); hidden {
		t.Fatal("no burst warning at the threshold")
	}
	// Out of the window, the burst is over.
	e.clock.Advance(2 * e.h.BurstWindow)
	if _, hidden := e.get("/").find("banner-burst").Attr("hidden"); !hidden {
		t.Fatal("burst warning after the window")
	}

	// The alarm holds after more grants (the report moved no counter),
	// until an admin reset.
	e.clock.Advance(2 * time.Minute)
	if tok := e.acquire("restored", "a", time.Minute); tok != 2 {
		t.Fatalf("grant after the alarm: token %d, want 2", tok)
	}
	if _, hidden := e.get("/").find("banner-behind").Attr("hidden"); hidden {
		t.Fatal("behind warning gone before the counter was reset")
	}
	feed := e.get("/").find("feed-item").FilterFunction(func(_ int, s *goquery.Selection) bool {
		return s.AttrOr("data-type", "") == "alarm"
	})
	if feed.Length() != 1 || !strings.Contains(feed.Text(), "counter-behind") || feed.Find(".badge svg").Length() != 1 {
		t.Fatalf("alarm in the feed: %q", feed.Text())
	}
	if _, err := e.svc.ResetCounter(context.Background(), "restored", 50); err != nil {
		t.Fatal(err)
	}
	if _, hidden := e.get("/").find("banner-behind").Attr("hidden"); !hidden {
		t.Fatal("behind warning after the reset")
	}
}

func TestResourcePage(t *testing.T) {
	e := newEnv(t)
	id := "a/b <c>"
	e.staleWrite(id, "api:10.0.0.7")
	e.clock.Advance(2 * time.Second)
	tok := e.acquire(id, "holder-z", 30*time.Second)
	e.fence(id, tok, "api:10.0.0.8")

	p := e.get("/resources/" + url.PathEscape(id))
	if p.status != 200 {
		t.Fatalf("status %d: %s", p.status, p.body)
	}
	if p.find("resource-id").Text() != id || p.doc.Find("head title").Text() != id+" · fenceview" {
		t.Fatalf("heading %q", p.find("resource-id").Text())
	}
	lock := p.find("lock-state")
	field := func(f string) string { return strings.TrimSpace(lock.Find(`[data-field="` + f + `"]`).Text()) }
	if field("state") != "locked" || field("holder") != "holder-z" || field("token") != strconv.FormatInt(tok, 10) ||
		field("hwm") != strconv.FormatInt(tok, 10) || !strings.HasPrefix(field("rejected"), "1") {
		t.Fatalf("lock card: %q", lock.Text())
	}
	if href := lock.Find(`[data-field="rejected"] a`).AttrOr("href", ""); href != "/rejections?resource="+url.QueryEscape(id) {
		t.Fatalf("rejections link %q", href)
	}
	// The chart marks 3 grants, 2 accepted writes and 1 rejection, and
	// says so in words.
	chart := p.find("chart")
	if g, a, r := chart.Find(`[data-testid="chart-grant"]`).Length(), chart.Find(`[data-testid="chart-accept"]`).Length(),
		chart.Find(`[data-testid="chart-reject"]`).Length(); g != 3 || a != 2 || r != 1 {
		t.Fatalf("chart marks: %d grants, %d accepts, %d rejects", g, a, r)
	}
	if !strings.Contains(chart.Find("desc").Text(), "3 grants, 2 accepted writes and 1 rejection") {
		t.Fatalf("chart summary %q", chart.Find("desc").Text())
	}
	if title := chart.Find(`[data-testid="chart-reject"] title`).Text(); !strings.Contains(title, "stale-token") || !strings.Contains(title, "api:10.0.0.7") {
		t.Fatalf("rejection mark title %q", title)
	}
	if chart.Find(`[data-testid="chart-hwm"]`).AttrOr("d", "") == "" {
		t.Fatal("no high-water mark line")
	}
	rows := p.find("history-row")
	if rows.Length() != 8 || rows.First().AttrOr("data-type", "") != "accept" {
		t.Fatalf("%d history rows, first %q", rows.Length(), rows.First().AttrOr("data-type", ""))
	}
	if p.doc.Find("body").AttrOr("data-resource", "") != id {
		t.Fatal("the page's stream filter is not its resource")
	}
}

func TestResourcePageErrors(t *testing.T) {
	e := newEnv(t)
	last := e.svc.LastSeq()
	p := e.get("/resources/" + url.PathEscape("<script>nope</script>"))
	if p.status != 404 || p.find("error-page").Length() != 1 {
		t.Fatalf("unknown resource: %d", p.status)
	}
	if msg := p.find("error-message").Text(); !strings.Contains(msg, "<script>nope</script>") || strings.Contains(p.body, "<script>nope") {
		t.Fatalf("404 message %q (must name the id as text)", msg)
	}
	for _, path := range []string{"/resources/%FF", "/resources/a%0Ab", "/resources/" + strings.Repeat("r", 161), "/resource?id="} {
		if p := e.get(path); p.status != 400 || p.find("error-page").Length() != 1 {
			t.Errorf("%s: %d, want a 400 page", path, p.status)
		}
	}
	if e.svc.LastSeq() != last || len(e.svc.Resources()) != 0 {
		t.Fatal("looking at pages changed something")
	}
}

// "." and ".." cannot be path segments; their links use the query form.
func TestDotIDs(t *testing.T) {
	e := newEnv(t)
	for _, id := range []string{".", ".."} {
		e.acquire(id, "h", time.Minute)
	}
	p := e.get("/")
	p.find("resource-link").Each(func(_ int, a *goquery.Selection) {
		href := a.AttrOr("href", "")
		if href != "/resource?id="+url.QueryEscape(a.Text()) {
			t.Errorf("link to %q: %q", a.Text(), href)
		}
		if q := e.get(href); q.status != 200 || q.find("resource-id").Text() != a.Text() {
			t.Errorf("%s: %d %q", href, q.status, q.find("resource-id").Text())
		}
	})
}

func TestRejectionsFiltersAndPaging(t *testing.T) {
	e := newEnv(t)
	for i := 0; i < 5; i++ {
		e.staleWrite("inv/1", "api:a")
	}
	e.staleWrite("inv/2", "api:b", "api:a")

	p := e.get("/rejections")
	if p.find("rejection-row").Length() != 7 || p.find("next-page").Length() != 0 || p.find("newest-page").Length() != 0 {
		t.Fatalf("unfiltered: %d rows", p.find("rejection-row").Length())
	}

	// Page through one resource two rows at a time.
	var seqs []string
	next := "/rejections?resource=" + url.QueryEscape("inv/1") + "&limit=2"
	for pages := 0; next != ""; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		p = e.get(next)
		if p.status != 200 {
			t.Fatalf("%s: %d", next, p.status)
		}
		p.find("rejection-row").Each(func(_ int, s *goquery.Selection) {
			if s.Find("td.id a").Text() != "inv/1" {
				t.Errorf("row of %q under resource=inv/1", s.Find("td.id a").Text())
			}
			seqs = append(seqs, s.AttrOr("data-seq", ""))
		})
		if pages > 0 && p.find("newest-page").AttrOr("href", "") != "/rejections?limit=2&resource=inv%2F1" {
			t.Errorf("newest link %q", p.find("newest-page").AttrOr("href", ""))
		}
		if v, _ := p.doc.Find("#f-resource").Attr("value"); v != "inv/1" {
			t.Errorf("form lost the filter: %q", v)
		}
		next = p.find("next-page").AttrOr("href", "")
	}
	if len(seqs) != 5 {
		t.Fatalf("paged %d rows, want 5: %v", len(seqs), seqs)
	}
	for i := 1; i < len(seqs); i++ {
		a, _ := strconv.Atoi(seqs[i-1])
		b, _ := strconv.Atoi(seqs[i])
		if b >= a {
			t.Fatalf("not newest first without repeats: %v", seqs)
		}
	}

	if n := e.get("/rejections?source=api:b").find("rejection-row").Length(); n != 1 {
		t.Fatalf("source filter: %d rows", n)
	}
	if n := e.get("/rejections?reason=unissued-token").find("rejection-row").Length(); n != 0 {
		t.Fatalf("reason filter: %d rows", n)
	}
	if e.get("/rejections?reason=unissued-token").find("no-rejections").Length() != 1 {
		t.Fatal("no 'nothing matches' message")
	}
	// The form's datetime-local values are UTC; each staleWrite is a
	// minute and two seconds after the one before.
	p = e.get("/rejections?since=2026-09-24T06:19&until=2026-09-24T06:21:10")
	if p.status != 200 || p.find("rejection-row").Length() != 2 {
		t.Fatalf("time range: %d, %d rows", p.status, p.find("rejection-row").Length())
	}
	if v, _ := p.doc.Find("#f-since").Attr("value"); v != "2026-09-24T06:19:00" {
		t.Fatalf("since shown as %q", v)
	}
	if href := p.find("csv-link").AttrOr("href", ""); href != "/rejections.csv?since=2026-09-24T06%3A19%3A00.000Z&until=2026-09-24T06%3A21%3A10.000Z" {
		t.Fatalf("csv link %q", href)
	}
}

func TestRejectionsBadFilter(t *testing.T) {
	e := newEnv(t)
	e.staleWrite("r", "s")
	last := e.svc.LastSeq()
	for _, q := range []string{"limit=0", "limit=x", "since=yesterday", "cursor=abc", "cursor=-1",
		"resource=" + strings.Repeat("r", 161), "resource=%FF", "since=2026-09-24T07:00Z&until=2026-09-24T06:00Z"} {
		p := e.get("/rejections?" + q)
		if p.status != 400 || p.find("filter-error").Length() != 1 || p.find("rejection-row").Length() != 0 {
			t.Errorf("%s: %d, want a 400 page with the error", q, p.status)
		}
		if p := e.get("/rejections.csv?" + q); p.status != 400 {
			t.Errorf("csv %s: %d", q, p.status)
		}
	}
	if e.svc.LastSeq() != last {
		t.Fatal("a bad filter changed something")
	}
}

func TestRejectionsCSV(t *testing.T) {
	e := newEnv(t)
	e.staleWrite("=HYPERLINK(\"x\")", "api:a")
	e.staleWrite("plain", "api:b", "api:c")

	p := e.get("/rejections.csv?resource=plain")
	if p.status != 200 || !strings.HasPrefix(p.header.Get("Content-Type"), "text/csv") ||
		!strings.Contains(p.header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("csv: %d %v", p.status, p.header)
	}
	rows, err := csv.NewReader(strings.NewReader(p.body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || strings.Join(rows[0], ",") != "id,at,resourceId,presented,required,reason,source,holder" {
		t.Fatalf("csv rows: %v", rows)
	}
	if rows[1][2] != "plain" || rows[1][5] != "stale-token" || rows[1][6] != "api:c" || rows[2][6] != "api:b" {
		t.Fatalf("csv content: %v", rows)
	}
	all, _ := csv.NewReader(strings.NewReader(e.get("/rejections.csv").body)).ReadAll()
	if len(all) != 4 || all[3][2] != `'=HYPERLINK("x")` {
		t.Fatalf("formula not defused: %v", all)
	}

	// An export longer than one read of the history is complete and in order.
	defer func(n int) { csvPage = n }(csvPage)
	csvPage = 2
	all2, _ := csv.NewReader(strings.NewReader(e.get("/rejections.csv").body)).ReadAll()
	if strings.Join(flatten(all2), "|") != strings.Join(flatten(all), "|") {
		t.Fatalf("paged export differs:\n%v\n%v", all2, all)
	}
	e.h.CSVMax = 2
	if capped, _ := csv.NewReader(strings.NewReader(e.get("/rejections.csv").body)).ReadAll(); len(capped) != 3 {
		t.Fatalf("CSVMax 2: %d lines", len(capped))
	}
}

func flatten(rows [][]string) []string {
	var out []string
	for _, r := range rows {
		out = append(out, strings.Join(r, ","))
	}
	return out
}

func TestStatic(t *testing.T) {
	e := newEnv(t)
	p := e.get("/static/app.js")
	etag := p.header.Get("ETag")
	if p.status != 200 || !strings.Contains(p.header.Get("Content-Type"), "javascript") || etag == "" ||
		!strings.Contains(p.body, "textContent") {
		t.Fatalf("app.js: %d %v", p.status, p.header)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/static/app.js", nil)
	req.Header.Set("If-None-Match", etag)
	e.mux.ServeHTTP(rec, req)
	if rec.Code != 304 {
		t.Fatalf("matching If-None-Match: %d", rec.Code)
	}
	if p := e.get("/static/app.css"); p.status != 200 || !strings.HasPrefix(p.header.Get("Content-Type"), "text/css") {
		t.Fatalf("app.css: %d %v", p.status, p.header)
	}
	if p := e.get("/static/nope.js"); p.status != 404 {
		t.Fatalf("missing file: %d", p.status)
	}
	// Pages link the hashed URL, which may be cached for good.
	href := e.get("/").doc.Find(`link[rel="stylesheet"]`).AttrOr("href", "")
	if p := e.get(href); p.status != 200 || !strings.Contains(p.header.Get("Cache-Control"), "immutable") {
		t.Fatalf("%s: %d %v", href, p.status, p.header)
	}
}

// The script never hands data to the HTML parser.
func TestScriptInsertsTextOnly(t *testing.T) {
	e := newEnv(t)
	js := e.get("/static/app.js").body
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("} {
		if strings.Contains(js, bad) {
			t.Errorf("app.js uses %s", bad)
		}
	}
}

func TestNiceStep(t *testing.T) {
	for span, want := range map[int64]int64{0: 1, 4: 1, 5: 2, 9: 2, 20: 5, 25: 10, 1000: 500} {
		if got := niceStep(span); got != want {
			t.Errorf("niceStep(%d) = %d, want %d", span, got, want)
		}
	}
	if c := newChart(nil, nil, fenceview.Resource{}); len(c.Marks) != 0 || c.Summary == "" {
		t.Fatalf("empty chart: %+v", c)
	}
}
