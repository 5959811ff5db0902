package main

import (
	"context"
	"flag"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fenceview/fenceview/internal/loopport"
)

var updateScreenshot = flag.Bool("update-screenshot", false, "also write the overview screenshot to docs/dashboard.png")

// chromium finds a Chromium to drive: $FENCEVIEW_CHROMIUM, or one on PATH.
func chromium() string {
	if p := os.Getenv("FENCEVIEW_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser starts headless Chromium, with more options when given (a time
// zone, say); in CI a missing browser is a failure.
func browser(t *testing.T, more ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	path := chromium()
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium not found: CI must install it (apt-get install chromium) so the dashboard is tested in a real browser")
		}
		t.Skip("chromium not found; install it (apt-get install chromium) or set FENCEVIEW_CHROMIUM to run the browser test")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		// Without these, Chromium waits on network it cannot reach.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 860),
	)
	opts = append(opts, more...)
	// A hang guard for the whole test, not a timing assertion.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	if err := chromedp.Do(bctx); err != nil { // starts the browser
		t.Fatalf("starting chromium: %v", err)
	}
	return bctx
}

// waitJS waits until a JavaScript expression is true.
func waitJS(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(30*time.Second))(ctx, t)
		return err
	})
}

// js runs a statement for its effect.
func js(stmt string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool]("("+stmt+", true)")(ctx, t)
		return err
	})
}

// jsString quotes an id as a JavaScript string literal (Go's quoting is
// valid JavaScript for these ids).
func jsString(s string) string { return strconv.Quote(s) }

// rowOf is the overview's table row of a resource, as JavaScript.
func rowOf(id string) string {
	return `[...document.querySelectorAll('[data-testid="resource-row"]')].find(r => r.dataset.resource === ` + jsString(id) + `)`
}

// The dashboard in a real browser: events made through the API appear
// without a reload, links lead to the resource page, and the page fits a
// phone.
func TestDashboardInBrowser(t *testing.T) {
	p := newPage(t)
	ctx := p.ctx
	s := startServer(t)
	seedStory(s)

	p.do("open the overview",
		chromedp.EmulateViewport(1280, 860),
		chromedp.Navigate(s.URL()+"/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="resources"]`)),
		waitJS(`document.body.dataset.live === "open"`),
		js(`window.__sameDocument = "yes"`),
	)

	// A grant and a stale write, through the API, on an id that needs
	// escaping in a URL.
	id := "payments/eu-west #2"
	old := tokenOf(s.acquire(id, "worker-1", 5000))
	s.clock.Advance(6 * time.Second)
	fresh := tokenOf(s.acquire(id, "worker-2", 30000))
	s.fence(id, fresh)
	if r := s.fence(id, old); r.Status != 409 {
		t.Fatalf("stale write: %d %s", r.Status, r.Raw)
	}
	feedHas := func(typ string) string {
		return `[...document.querySelectorAll('[data-testid="feed-item"]')].some(li => li.dataset.type === ` +
			jsString(typ) + ` && li.dataset.resource === ` + jsString(id) + ` && li.querySelector("a.res").textContent === ` + jsString(id) + `)`
	}
	p.do("see the grant and the stale write live",
		waitJS(feedHas("grant")),
		waitJS(feedHas("reject")),
		waitJS(`[...document.querySelectorAll('[data-testid="refusal"] a.res')].some(a => a.textContent === `+jsString(id)+`)`),
		// The table gains the new resource once its state is fetched.
		waitJS(rowOf(id)+`?.querySelector('[data-col="holder"]').textContent === "worker-2"`),
	)
	if p.str(`window.__sameDocument`) != "yes" {
		t.Fatal("the page reloaded to show the events")
	}
	reject := p.str(`[...document.querySelectorAll('[data-testid="feed-item"]')].find(li => li.dataset.type === "reject").textContent`)
	for _, want := range []string{"stale", "token " + itoa(old) + " refused (stale-token)", "needs ≥ " + itoa(fresh)} {
		if !strings.Contains(reject, want) {
			t.Errorf("stale write shown as %q, want %q in it", reject, want)
		}
	}
	if href := p.str(rowOf(id) + `.querySelector("a").getAttribute("href")`); href != "/resources/"+url.PathEscape(id) {
		t.Errorf("new row links to %q", href)
	}

	p.do("let the arrival highlight fade, scroll to the top",
		waitJS(`document.getAnimations().every(a => a.playState === "finished")`),
		js(`window.scrollTo(0, 0)`))
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	saveScreenshot(t, shot)

	// A phone: nothing wider than the screen.
	p.do("phone width",
		chromedp.EmulateViewport(390, 844),
		waitJS(`window.innerWidth === 390`),
	)
	if fits := p.str(`String(document.documentElement.scrollWidth <= window.innerWidth)`); fits != "true" {
		t.Error("the overview is wider than a 390 px phone screen")
	}
	p.do("back to desktop width", chromedp.EmulateViewport(1280, 860))

	// Ids reach the page as text, never as markup.
	hostile := `<img src=x onerror="document.body.dataset.pwned=1">`
	s.acquire(hostile, "<b>h</b>", 1000)
	p.do("show a hostile id as text",
		waitJS(`[...document.querySelectorAll('[data-testid="feed-item"] a.res')].some(a => a.textContent === `+jsString(hostile)+`)`),
		waitJS(rowOf(hostile)+`?.querySelector('[data-col="holder"]').textContent === "<b>h</b>"`),
	)
	if n := p.str(`String(document.querySelectorAll("main img, main b").length) + (document.body.dataset.pwned || "")`); n != "0" {
		t.Fatalf("markup from an id was parsed: %q", n)
	}

	// Follow the new row's link, with a real click.
	p.do("follow the link to the resource page",
		js(rowOf(id)+`.querySelector("a").setAttribute("data-target", "yes")`),
		chromedp.Click(chromedp.CSS(`a[data-target="yes"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="lock-state"]`)),
		waitJS(`document.body.dataset.live === "open"`),
	)
	if heading := p.str(`document.querySelector('[data-testid="resource-id"]').textContent`); heading != id {
		t.Fatalf("resource page heading %q, want %q", heading, id)
	}
	if path := p.str(`location.pathname`); path != "/resources/"+url.PathEscape(id) {
		t.Fatalf("resource page at %q", path)
	}
	// The resource page is live too: a new write lands in its history.
	s.fence(id, fresh)
	p.do("see a write on the resource page live",
		waitJS(`document.querySelector('[data-testid="history-row"]').dataset.type === "accept" && `+
			`document.querySelectorAll('[data-testid="history-row"][data-type="accept"]').length === 2`),
		waitJS(`document.querySelector('[data-field="accepted"]').textContent === "2"`),
		waitJS(`!document.querySelector('[data-testid="chart-note"]').hidden`),
	)
}

// seedStory gives the overview something to show: locks changing hands,
// a renewal, a plugin's reports and a paused client fenced out.
func seedStory(s *testServer) {
	t := s.t
	for i := 0; i < 2; i++ {
		g := tokenOf(s.acquire("orders/eu-west", "billing-1", 10000))
		s.fence("orders/eu-west", g)
		s.clock.Advance(1500 * time.Millisecond)
		s.fence("orders/eu-west", g)
		s.do("POST", "/v1/locks/orders%2Feu-west/release", map[string]any{"holder": "billing-1"})
		s.clock.Advance(time.Second)
	}
	g := tokenOf(s.acquire("orders/eu-west", "billing-2", 30000))
	s.fence("orders/eu-west", g)

	a := tokenOf(s.acquire("inventory:sku-7", "indexer-a", 4000))
	s.fence("inventory:sku-7", a)
	s.clock.Advance(5 * time.Second) // indexer-a is paused past its lease
	b := tokenOf(s.acquire("inventory:sku-7", "indexer-b", 45000))
	s.fence("inventory:sku-7", b)
	s.fence("inventory:sku-7", a) // indexer-a wakes up: refused

	s.acquire("reports/daily", "scheduler", 60000)
	s.clock.Advance(2 * time.Second)
	s.do("POST", "/v1/locks/reports%2Fdaily/renew", map[string]any{"holder": "scheduler"})

	r := s.do("POST", "/v1/decisions", map[string]any{"decisions": []map[string]any{
		{"resourceId": "ledger/acme corp", "token": 12, "accepted": true, "source": "plugin:postgres"},
		{"resourceId": "ledger/acme corp", "token": 11, "accepted": false, "required": 12, "reason": "stale-token", "source": "plugin:postgres-replica"},
	}})
	if r.Status != 200 {
		t.Fatalf("seeding decisions: %d %s", r.Status, r.Raw)
	}
	s.clock.Advance(3 * time.Second)
}

func saveScreenshot(t *testing.T, png []byte) {
	t.Helper()
	if len(png) == 0 {
		t.Fatal("empty screenshot")
	}
	if err := os.WriteFile(filepath.Join(t.TempDir(), "dashboard.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	if *updateScreenshot {
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "dashboard.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// When the server goes away the page says so, retries, and on reconnecting
// resumes after the last event it saw, so events made meanwhile still
// arrive.
func TestDashboardReconnectsAndResumes(t *testing.T) {
	ctx := browser(t)
	// The server comes back on its address, so the address is one no
	// outgoing connection can take while it is away (loopport).
	home, err := loopport.Pick()
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, func(m *Main) { m.Addr = home })
	s.acquire("before", "a", 60000)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(s.URL()+"/"),
		waitJS(`document.body.dataset.live === "open"`),
		waitJS(`document.querySelector('[data-testid="banner-connection"]').hidden`),
	); err != nil {
		t.Fatal(err)
	}

	addr, dbPath := strings.TrimPrefix(s.URL(), "http://"), s.DBPath
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		waitJS(`document.body.dataset.live === "reconnecting" && !document.querySelector('[data-testid="banner-connection"]').hidden`),
	); err != nil {
		t.Fatalf("no lost-connection warning: %v", err)
	}

	// Events recorded while the page is cut off (by a server on another
	// port, so the page cannot be connected when they happen)...
	restart := func(addr string) *testServer {
		return startServer(t, func(m *Main) { m.Addr, m.DBPath, m.Clock = addr, dbPath, s.clock })
	}
	away := restart("127.0.0.1:0")
	r := doRequest(t, "POST", away.URL()+"/v1/locks/while-away/acquire", map[string]any{"holder": "b"})
	if r.Status != 200 {
		t.Fatalf("acquire while away: %d %s", r.Status, r.Raw)
	}
	if err := away.Close(); err != nil {
		t.Fatal(err)
	}
	// ...reach it once the server is back where the page expects it.
	restart(addr)
	if err := chromedp.Do(ctx,
		waitJS(`document.body.dataset.live === "open"`),
		waitJS(`[...document.querySelectorAll('[data-testid="feed-item"]')].some(li => li.dataset.type === "grant" && li.dataset.resource === "while-away")`),
		waitJS(`document.querySelector('[data-testid="banner-connection"]').hidden`),
	); err != nil {
		t.Fatalf("did not resume: %v", err)
	}
	// Each event once: the replay does not repeat what the page had.
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="feed-item"]').length`))
	if err != nil || n != 2 {
		t.Fatalf("%d feed items (%v), want the two grants", n, err)
	}
}
