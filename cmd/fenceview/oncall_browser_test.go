package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The on-call dashboard in a real browser: search, sort and page the
// resource table on the server by clicking, switch the rates' time range,
// follow a holder, read the metrics page, filter rejections with the
// choice lists, and see times one way. With -update-screenshot it writes
// docs/dashboard-oncall.png, docs/dashboard-metrics.png and
// docs/dashboard-rejections.png.
func TestOnCallDashboardInBrowser(t *testing.T) {
	p := newPage(t)
	ctx := p.ctx
	s := startServer(t, func(m *Main) { m.DashboardAdmin = true })
	seedStory(s)
	for i := range 60 {
		id := fmt.Sprintf("fleet/%02d", i)
		g := tokenOf(s.acquire(id, fmt.Sprintf("node-%d", i%3), 60000))
		s.fence(id, g)
		if i%7 == 0 { // some resources refuse stale writes, a few times
			for range i / 7 {
				s.fence(id, g-1+1) // same token: accepted
			}
			s.do("POST", "/v1/decisions", map[string]any{"decisions": []map[string]any{
				{"resourceId": id, "token": 1, "accepted": false, "required": g, "reason": "stale-token", "source": "plugin:cache"},
			}})
		}
		s.clock.Advance(20 * time.Second)
	}

	rows := `[...document.querySelectorAll('[data-testid="resource-row"]')].map(r => r.dataset.resource)`

	p.do("open the overview",
		chromedp.EmulateViewport(1280, 1000),
		chromedp.Navigate(s.URL()+"/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="resources"]`)),
		waitAcross(`document.body.dataset.live === "open"`),
	)
	if n := p.str(`String(` + rows + `.length)`); n != "50" {
		t.Fatalf("first page has %s rows, want 50", n)
	}

	p.do("search by prefix",
		chromedp.SendKeys(chromedp.CSS(`#q`), "fleet/1"),
		chromedp.Click(chromedp.CSS(`[data-testid="search"] button`)),
		waitAcross(`location.search.includes("q=fleet%2F1")`),
		waitAcross(rows+`.length === 10 && `+rows+`.every(id => id.startsWith("fleet/1"))`),
	)

	p.do("sort by refusals, most first",
		chromedp.Click(chromedp.CSS(`[data-testid="sort-rejected"]`)),
		waitAcross(`location.search.includes("sort=rejected")`),
		waitAcross(`document.querySelector('[data-testid="sort-rejected"]').closest("th").getAttribute("aria-sort") === "descending"`),
	)
	if first := p.str(rows + `[0]`); first != "fleet/14" {
		t.Fatalf("most refused of fleet/1x: %q, want fleet/14", first)
	}

	p.do("page through every resource in id order",
		chromedp.Navigate(s.URL()+"/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="page-next"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="page-next"]`)),
		waitAcross(`location.search.includes("after=")`),
		waitAcross(rows+`.length > 0 && !`+rows+`.includes("fleet/00")`),
		chromedp.Click(chromedp.CSS(`[data-testid="page-first"]`)),
		waitAcross(`!location.search.includes("after=")`),
	)

	p.do("a week of rates",
		chromedp.Click(chromedp.CSS(`[data-testid="range-week"]`)),
		waitAcross(`document.querySelector('[data-testid="rates"]').dataset.range === "week"`),
		waitAcross(`document.querySelector(".rate-chart .line-grants").getAttribute("points").trim().split(" ").length === 84`),
		waitAcross(`document.body.dataset.live === "open"`),
	)

	// Live: a new resource that belongs on this page appears without a reload.
	s.acquire("fleet/1a", "node-9", 60000)
	p.do("a new row arrives live on a search page",
		chromedp.Navigate(s.URL()+"/?q=fleet%2F1"),
		waitAcross(`document.body.dataset.live === "open"`),
	)
	s.acquire("fleet/1b", "node-9", 60000)
	p.do("see it", waitAcross(rows+`.includes("fleet/1b")`))

	// One time format: local time and how long ago; the exact UTC on hover.
	tm := p.str(`(() => { const t = document.querySelector('[data-testid="feed-item"] time'); return t.textContent + "|" + t.title })()`)
	if !strings.Contains(tm, "ago") || !strings.HasSuffix(tm, " UTC") {
		t.Errorf("a feed time reads %q", tm)
	}

	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	saveDoc(t, "dashboard-oncall.png", shot)

	p.do("follow a holder",
		chromedp.Click(chromedp.CSS(`[data-resource="fleet/1b"] [data-testid="holder-link"]`)),
		waitAcross(`location.pathname === "/holders/node-9"`),
		waitAcross(`[...document.querySelectorAll('[data-testid="holder-row"]')].map(r => r.dataset.resource).join(" ") === "fleet/1a fleet/1b"`),
	)

	p.do("admin actions on the resource page: cancel, then force-expire",
		chromedp.Navigate(s.URL()+"/resources/fleet%2F1a"),
		chromedp.WaitVisible(chromedp.CSS(expireButton)),
		waitAcross(`document.body.dataset.live === "open"`),
		askFirst(expireButton),
		cancelDialog,
	)
	if st := s.do("GET", "/v1/locks/fleet%2F1a", nil); st.Body["locked"] != true {
		t.Fatalf("cancel expired the lock: %s", st.Raw)
	}
	p.do("confirm the force-expire",
		askFirst(expireButton),
		confirmDialog,
		waitAcross(`document.querySelector('[data-testid="admin-result"]').textContent.startsWith("Expired")`),
		waitAcross(`document.querySelector('[data-testid="history-row"]').dataset.type === "expire"`),
	)
	if st := s.do("GET", "/v1/locks/fleet%2F1a", nil); st.Body["locked"] != false {
		t.Fatalf("the lock is still held after force-expire: %s", st.Raw)
	}
	p.do("reset the counter",
		chromedp.SetValue(chromedp.CSS(`#reset-floor`), "100"),
		askFirst(resetButton),
		confirmDialog,
		waitAcross(`document.querySelector('[data-testid="admin-result"]').textContent === "Reset: the next grant takes token 101."`),
		waitAcross(`document.querySelector('[data-testid="history-row"]').dataset.type === "reset"`),
	)
	if g := s.acquire("fleet/1a", "node-9", 1000); tokenOf(g) != 101 {
		t.Fatalf("grant after the reset: token %d, want 101", tokenOf(g))
	}

	p.do("the metrics page",
		chromedp.Click(chromedp.CSS(`nav a[href="/status"]`)),
		waitAcross(`location.pathname === "/status"`),
		waitAcross(`document.querySelector('[data-metric="fenceview_grants_total"] .value') !== null`),
		waitAcross(`document.querySelector('[data-metric="fenceview_http_request_duration_seconds"] .value').textContent.includes("p99")`),
	)
	if held := p.str(`document.querySelector('[data-field="held"]').textContent`); held == "0" {
		t.Error("the metrics page says no lock is held")
	}
	shot, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	saveDoc(t, "dashboard-metrics.png", shot)

	p.do("filter rejections with the choice lists",
		chromedp.Navigate(s.URL()+"/rejections"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="reason-choice"]`)),
		waitAcross(`[...document.querySelectorAll('[data-testid="source-choice"] option')].some(o => o.textContent === "plugin:cache (9)")`),
		chromedp.SetValue(chromedp.CSS(`[data-testid="source-choice"]`), "plugin:cache"),
		chromedp.Click(chromedp.CSS(`[data-testid="filters"] button[type="submit"]`)),
		waitAcross(`location.search.includes("source=plugin%3Acache")`),
		waitAcross(`document.querySelectorAll('[data-testid="rejections"] tbody tr').length === 9`),
	)
	shot, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	saveDoc(t, "dashboard-rejections.png", shot)
}

// saveDoc keeps a screenshot in the test's directory, and in docs/ with
// -update-screenshot.
func saveDoc(t *testing.T, name string, img []byte) {
	t.Helper()
	if len(img) == 0 {
		t.Fatalf("empty screenshot %s", name)
	}
	if err := os.WriteFile(filepath.Join(t.TempDir(), name), img, 0o644); err != nil {
		t.Fatal(err)
	}
	if *updateScreenshot {
		if err := os.WriteFile(filepath.Join("..", "..", "docs", name), img, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// waitAcross is waitJS that survives the navigation a click starts: a
// poll cut short by the page going away is started again on the new page
// (the test's own context bounds it all).
func waitAcross(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for {
			_, err := chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(30*time.Second))(ctx, t)
			if err == nil || !(strings.Contains(err.Error(), "navigated or closed") || strings.Contains(err.Error(), "Cannot find context")) || ctx.Err() != nil {
				return err
			}
		}
	})
}
