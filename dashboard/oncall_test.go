package dashboard

import (
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/fenceview/fenceview/internal/auth"
)

func rowIDs(p page) []string {
	var ids []string
	p.find("resource-row").Each(func(_ int, s *goquery.Selection) { ids = append(ids, s.AttrOr("data-resource", "")) })
	return ids
}

// TestTableSortsSearchesAndPages: the overview's table is ordered, filtered
// and paged by the server, all of it in links.
func TestTableSortsSearchesAndPages(t *testing.T) {
	e := newEnv(t)
	e.h.TableSize = 3
	for i := range 7 {
		id := fmt.Sprintf("shop/%d", i)
		for range i % 4 { // shop/3 has 3 grants, shop/1 and shop/5 one...
			e.clock.Advance(time.Minute)
			e.acquire(id, "w", time.Second)
		}
		if i%4 == 0 {
			e.acquire(id, "w", time.Second)
		}
	}
	e.acquire("other", "w", time.Hour)

	p := e.get("/")
	if got := rowIDs(p); strings.Join(got, " ") != "other shop/0 shop/1" {
		t.Fatalf("first page: %v", got)
	}
	next, ok := p.find("page-next").Attr("href")
	if !ok {
		t.Fatal("no next page")
	}
	var all []string
	all = append(all, rowIDs(p)...)
	for next != "" {
		p = e.get(next)
		all = append(all, rowIDs(p)...)
		next = p.find("page-next").AttrOr("href", "")
	}
	if strings.Join(all, " ") != "other shop/0 shop/1 shop/2 shop/3 shop/4 shop/5 shop/6" {
		t.Fatalf("pages: %v", all)
	}

	// Sort by last token, largest first: the header's link says so.
	p = e.get("/")
	href := p.find("sort-last").AttrOr("href", "")
	p = e.get(href)
	if got := rowIDs(p); got[0] != "shop/3" || p.doc.Find(`th[aria-sort="descending"]`).Length() != 1 {
		t.Fatalf("sorted by last token: %v (%s)", got, href)
	}
	// Again: ascending.
	p = e.get(p.find("sort-last").AttrOr("href", ""))
	if p.doc.Find(`th[aria-sort="ascending"] [data-testid="sort-last"]`).Length() != 1 {
		t.Fatal("second click did not reverse the order")
	}

	// Prefix search, and what it matched.
	p = e.get("/?q=" + url.QueryEscape("shop/"))
	if got := rowIDs(p); len(got) != 3 || got[0] != "shop/0" {
		t.Fatalf("search: %v", got)
	}
	if c := strings.Join(strings.Fields(p.find("table-count").Text()), " "); !strings.HasPrefix(c, "7 resources start with “shop/”") {
		t.Fatalf("count: %q", c)
	}

	// Nonsense in the URL is a 400 with the first page, not a crash.
	for _, bad := range []string{"/?sort=nope", "/?after=!!", "/?q=" + strings.Repeat("x", 200)} {
		if p := e.get(bad); p.status != 400 || p.find("table-error").Length() != 1 {
			t.Errorf("%s: %d", bad, p.status)
		}
	}
}

func TestRatesOverARange(t *testing.T) {
	e := newEnv(t)
	e.acquire("a", "w", time.Second)
	e.staleWrite("a", "plugin")
	e.clock.Advance(time.Minute) // the minute of the stale write is over
	p := e.get("/?range=day")
	if p.find("rates").AttrOr("data-range", "") != "day" || p.find("range-day").AttrOr("aria-current", "") != "true" {
		t.Fatalf("range: %q", p.find("rates").AttrOr("data-range", ""))
	}
	if p.find("rate-refused").Text() != "0.2" { // 1 in 5 minutes
		t.Fatalf("refused per minute: %q", p.find("rate-refused").Text())
	}
	// The day's chart has one point per 15 minutes.
	pts := strings.Fields(p.doc.Find(".rate-chart .line-grants").AttrOr("points", ""))
	if len(pts) != 96 {
		t.Fatalf("%d points on a day's chart", len(pts))
	}
	// Sparklines: a's events in the hour to the page's drawing.
	if lbl := p.doc.Find(`[data-resource="a"] [data-testid="sparkline"]`).AttrOr("aria-label", ""); !strings.Contains(lbl, "events in the hour before this page was drawn") || strings.HasPrefix(lbl, "0 ") {
		t.Fatalf("sparkline: %q", lbl)
	}
}

func TestHolderPage(t *testing.T) {
	e := newEnv(t)
	e.acquire("x/1", "worker 7", time.Hour)
	e.acquire("x/2", "worker 7", time.Hour)
	e.acquire("x/3", "someone", time.Hour)
	e.acquire("x/4", "worker 7", time.Second)
	e.clock.Advance(2 * time.Second) // x/4's lease ran out
	p := e.get("/")
	href := p.doc.Find(`[data-resource="x/1"] [data-testid="holder-link"]`).AttrOr("href", "")
	if href != "/holders/worker%207" {
		t.Fatalf("holder link %q", href)
	}
	p = e.get(href)
	var ids []string
	p.find("holder-row").Each(func(_ int, s *goquery.Selection) { ids = append(ids, s.AttrOr("data-resource", "")) })
	if strings.Join(ids, " ") != "x/1 x/2" || p.find("holder-id").Text() != "worker 7" {
		t.Fatalf("holder page: %v %q", ids, p.find("holder-id").Text())
	}
	if p := e.get("/holders/" + strings.Repeat("h", 81)); p.status != 400 {
		t.Fatalf("long holder: %d", p.status)
	}
}

func TestRejectionChoiceLists(t *testing.T) {
	e := newEnv(t)
	e.staleWrite("r1", "plugin-a", "plugin-a")
	e.staleWrite("r2", "plugin-b")
	p := e.get("/rejections?reason=stale-token")
	opts := map[string]string{}
	p.find("reason-choice").Find("option").Each(func(_ int, s *goquery.Selection) {
		opts[s.AttrOr("value", "")] = s.Text()
	})
	if opts["stale-token"] != "stale-token (3)" || opts["unissued-token"] != "unissued-token (0)" || opts[""] != "any reason" {
		t.Fatalf("reason options: %v", opts)
	}
	if sel := p.find("reason-choice").Find("option[selected]").AttrOr("value", ""); sel != "stale-token" {
		t.Fatalf("selected reason %q", sel)
	}
	var sources []string
	p.find("source-choice").Find("option").Each(func(_ int, s *goquery.Selection) { sources = append(sources, s.Text()) })
	if strings.Join(sources, "|") != "any source|plugin-a (2)|plugin-b (1)" {
		t.Fatalf("sources: %v", sources)
	}
}

func TestMetricsPage(t *testing.T) {
	e := newEnv(t)
	e.acquire("m", "w", time.Hour)
	p := e.get("/status")
	if p.status != 200 {
		t.Fatalf("status %d", p.status)
	}
	field := func(name string) string {
		return strings.TrimSpace(p.find("metrics-now").Find(`[data-field="` + name + `"]`).Text())
	}
	if field("resources") != "1" || field("held") != "1" || field("alarms") != "0" {
		t.Fatalf("facts: %q %q %q", field("resources"), field("held"), field("alarms"))
	}
}

// TestAdminActionsOnlyForAdmins: the repair buttons show for an admin
// session, with auth off only on a server that allows them there, never
// for a viewer.
func TestAdminActionsOnlyForAdmins(t *testing.T) {
	e := newEnv(t)
	e.acquire("r", "w", time.Hour)
	if p := e.get("/resources/r"); p.find("admin-actions").Length() != 0 {
		t.Fatal("admin actions shown to everyone with auth off")
	}
	e.h.AdminWithoutAuth = true
	if p := e.get("/resources/r"); p.find("admin-actions").Length() != 1 {
		t.Fatal("no admin actions with auth off on a server that allows them")
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/resources/r", nil)
	req = req.WithContext(auth.NewContext(req.Context(), &auth.Principal{KeyID: "adm", Name: "ops", Role: auth.Admin}))
	e.h.AdminWithoutAuth = false
	e.mux.ServeHTTP(rec, req)
	if !strings.Contains(rec.Body.String(), `data-testid="admin-actions"`) {
		t.Fatal("an admin session sees no admin actions")
	}
	rec = httptest.NewRecorder()
	req = httptest.NewRequest("GET", "/resources/r", nil)
	req = req.WithContext(auth.NewContext(req.Context(), &auth.Principal{KeyID: "k", Name: "viewer", Role: auth.Viewer}))
	e.mux.ServeHTTP(rec, req)
	if rec.Code != 200 || strings.Contains(rec.Body.String(), `data-testid="admin-actions"`) {
		t.Fatalf("a viewer sees admin actions (%d)", rec.Code)
	}
}
