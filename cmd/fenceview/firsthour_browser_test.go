package main

import (
	"context"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// What on-call ran into in the dashboard's first hour, each in a real
// browser against the real server. With -update-screenshot they also
// write docs/dashboard-resource.png and docs/dashboard-holder.png.

// pageT drives one browser tab for a test.
type pageT struct {
	t   *testing.T
	ctx context.Context
}

func newPage(t *testing.T) *pageT {
	return &pageT{t: t, ctx: browser(t)}
}

func (p *pageT) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, steps...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

func (p *pageT) str(expr string) string {
	p.t.Helper()
	return evaluate[string](p.t, p.ctx, expr)
}

func (p *pageT) num(expr string) float64 {
	p.t.Helper()
	return evaluate[float64](p.t, p.ctx, expr)
}

// evaluate runs a JavaScript expression in the tab of ctx and returns its
// value, failing the test if it does not run or is not a T.
func evaluate[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

func (p *pageT) open(url, ready string) {
	p.t.Helper()
	p.do("open "+url, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(url), waitAcross(ready))
}

func (p *pageT) shot(name string) {
	p.t.Helper()
	p.do("settle", waitJS(`document.getAnimations().every(a => a.playState === "finished")`), js(`window.scrollTo(0, 0)`))
	img, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.t.Fatal(err)
	}
	saveDoc(p.t, name, img)
}

// login logs the tab in with a key's secret (or the admin token).
func (p *pageT) login(base, secret string) {
	p.t.Helper()
	p.do("log in",
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="login"]`)),
		chromedp.SendKeys(chromedp.CSS(`#key`), secret),
		chromedp.Click(chromedp.CSS(`[data-testid="login-submit"]`)),
		waitAcross(`location.pathname === "/" && document.querySelector('[data-testid="resources"]') !== null`),
	)
}

// After a restore the banner and the Lock card said different things
// ("high-water mark 5" against "High-water mark 0"): now both show the one
// figure from the one function, beside what the API says, live too.
func TestAlarmShowsOneFigureInBrowser(t *testing.T) {
	p := newPage(t)
	s := startServer(t)
	for range 4 {
		s.acquire("inv:42", "a", 1000)
		s.do("POST", "/v1/locks/inv:42/expire", nil)
	}
	report := func(required int) {
		r := s.do("POST", "/v1/decisions", map[string]any{"decisions": []map[string]any{
			{"resourceId": "inv:42", "token": 4, "accepted": false, "required": required, "reason": "stale-token", "source": "inventory-db"},
		}})
		if r.Status != 200 {
			t.Fatalf("report: %d %s", r.Status, r.Raw)
		}
	}
	report(10)
	api := s.do("GET", "/v1/resources/inv:42", nil)
	if api.num("highWaterMark") != 0 || api.num("lastToken") != 4 || api.num("counterAlarm") != 10 {
		t.Fatalf("the API's resource: %s", api.Raw)
	}
	p.open(s.URL()+"/resources/inv:42", `document.body.dataset.live === "open"`)
	banner := `document.querySelector('[data-testid="banner-behind"] li[data-resource="inv:42"]').textContent.trim()`
	card := func(f string) string {
		return `document.querySelector('[data-testid="lock-state"] [data-field="` + f + `"]').textContent.trim()`
	}
	want := "token 10 in use at a guard, last token issued 4"
	if got := p.str(banner); got != "inv:42: "+want {
		t.Errorf("banner: %q", got)
	}
	if got := p.str(card("alarm")); got != want {
		t.Errorf("Lock card's alarm: %q", got)
	}
	if hwm, last := p.str(card("hwm")), p.str(card("last")); hwm != "0" || !strings.HasPrefix(last, "4") {
		t.Errorf("Lock card: high-water mark %q, last token %q; the API says 0 and 4", hwm, last)
	}
	if strings.Contains(p.str(`document.body.textContent`), "high-water mark 10") {
		t.Error("the page still calls the alarm's token a high-water mark")
	}
	// The log says it in the same words, with the alarm's reason and source.
	logged := `document.querySelector('[data-testid="history-row"][data-type="alarm"] .detail')?.textContent`
	if got := p.str(logged); got != want+" (counter-behind) from inventory-db" {
		t.Errorf("the history's alarm: %q", got)
	}
	// Live: a higher claim changes both, the same way.
	report(12)
	want = "token 12 in use at a guard, last token issued 4"
	p.do("the banner, the card and the log follow the stream",
		waitJS(card("alarm")+` === `+jsString(want)),
		waitJS(banner+` === `+jsString("inv:42: "+want)),
		waitJS(logged+` === `+jsString(want+" (counter-behind) from inventory-db")),
	)
	p.shot("dashboard-alarm.png")
}

// "Per minute" was the hour's average: 0.5 grants / min while running at
// 30 a minute. The cards now count the last five complete minutes, and
// the chart has a legend and a y axis.
func TestRatesShowNowInBrowser(t *testing.T) {
	p := newPage(t)
	s := startServer(t)
	s.clock.Advance(t0.Truncate(time.Minute).Add(time.Minute).Sub(t0)) // the start of a minute
	for range 30 {
		s.acquire("busy", "w", 1000)
		s.do("POST", "/v1/locks/busy/release", map[string]any{"holder": "w"})
		s.clock.Advance(1900 * time.Millisecond)
	}
	s.clock.Advance(time.Minute) // that minute is over, and most of the next one
	p.open(s.URL()+"/", `document.querySelector('[data-testid="rates"]') !== null`)
	for id, want := range map[string]string{"rate-grants": "6.0", "rate-accepted": "0.0"} {
		if got := p.str(`document.querySelector('[data-testid="` + id + `"]').textContent.trim()`); got != want {
			t.Errorf("%s = %q, want %q", id, got, want)
		}
	}
	if got := p.str(`[...document.querySelectorAll('[data-testid="rate-legend"] > span')].map(s => s.textContent.trim()).slice(0, 3).join("|")`); got != "grants|writes accepted|writes refused" {
		t.Errorf("legend: %q", got)
	}
	if got := p.str(`[...document.querySelectorAll('[data-testid="rate-tick"]')].map(t => t.textContent).join(" ")`); got != "0 10 20 30" {
		t.Errorf("y axis: %q", got)
	}
	if h := p.num(`document.querySelector('[data-testid="rate-tick"]').getBoundingClientRect().height`); h < 11 {
		t.Errorf("y-axis labels are %.1f px tall", h)
	}
	p.open(s.URL()+"/status", `document.querySelector('[data-field="rates"]') !== null`)
	if got := p.str(`document.querySelector('[data-field="rates"]').textContent.trim()`); !strings.HasPrefix(got, "6.0 grants") {
		t.Errorf("metrics page, last 5 complete minutes: %q", got)
	}
}

// A 160-byte id, an 80-byte holder and 19-digit tokens pushed the refused
// count off-screen: ids are cut with the whole id on hover, numbers align
// right, and the refused column is in view at any width.
func TestRefusedColumnStaysInViewInBrowser(t *testing.T) {
	p := newPage(t)
	s := startServer(t)
	long := "ledger/" + strings.Repeat("tenant-4f9a1c2e-", 10)
	long = long[:160]
	// A 19-digit mark, under the bound a report on an unused id may set
	// (fenceview.MaxReportedMark).
	r := s.do("POST", "/v1/decisions", map[string]any{"decisions": []map[string]any{
		{"resourceId": long, "token": int64(4611686018427387000), "accepted": true, "source": "plugin:pg"},
		{"resourceId": long, "token": 1, "accepted": false, "required": int64(4611686018427387000), "reason": "stale-token", "source": "plugin:pg"},
	}})
	if r.Status != 200 {
		t.Fatalf("report: %d %s", r.Status, r.Raw)
	}
	s.acquire(long, strings.Repeat("h", 80), 60000)
	s.acquire("short", "w", 60000)
	row := rowOf(long)
	for _, width := range []int64{1280, 390} {
		p.do("open the overview", chromedp.EmulateViewport(width, 900), chromedp.Navigate(s.URL()+"/"),
			waitJS(`document.body.dataset.live === "open"`))
		visible := `(() => {
			const wrap = document.querySelector('[data-testid="resources"]').closest(".table-wrap").getBoundingClientRect();
			const cells = [document.querySelector('[data-testid="sort-rejected"]').closest("th"), ...document.querySelectorAll('td[data-col="rejected"]')];
			const el = document.querySelector('[data-testid="resources"]').closest(".table-wrap");
			return el.scrollWidth <= el.clientWidth && cells.every(c => { const b = c.getBoundingClientRect(); return b.width > 0 && b.left >= wrap.left - 0.5 && b.right <= wrap.right + 0.5 && b.right <= window.innerWidth; });
		})()`
		if p.str(`String(`+visible+`)`) != "true" {
			t.Errorf("at %d px the table scrolls sideways or the refused column is not in view", width)
		}
		if got := p.str(row + `.querySelector('td[data-col="rejected"]').textContent`); got != "1" {
			t.Errorf("refused count %q", got)
		}
	}
	p.do("desktop", chromedp.EmulateViewport(1280, 900))
	link := row + `.querySelector('[data-testid="resource-link"]')`
	if got := p.str(link + `.title`); got != long {
		t.Errorf("the id's hover text is %q", got)
	}
	if p.str(`String(`+link+`.scrollWidth > `+link+`.clientWidth)`) != "true" {
		t.Error("the long id is not cut")
	}
	if got := p.str(`getComputedStyle(` + row + `.querySelector('td[data-col="hwm"]')).textAlign`); got != "right" {
		t.Errorf("numbers align %q", got)
	}
	if got := p.str(row + `.querySelector('td[data-col="hwm"]').textContent`); got != "4,611,686,018,427,387,000" {
		t.Errorf("the mark reads %q", got)
	}
}

// The token chart was small (7 px labels) beside an empty half page, grant
// marks hid under writes, and every sparkline looked alike.
func TestTokenChartAndSparklinesInBrowser(t *testing.T) {
	p := newPage(t)
	s := startServer(t, func(m *Main) { m.DashboardAdmin = true })
	seedStory(s)
	for i := range 6 { // a grant and a write at the same token and the same instant
		for range i + 1 {
			g := tokenOf(s.acquire("payments/eu", "billing-3", 1000))
			s.fence("payments/eu", g)
			s.do("POST", "/v1/locks/payments%2Feu/release", map[string]any{"holder": "billing-3"})
			s.clock.Advance(3 * time.Second)
		}
		s.clock.Advance(5 * time.Minute) // busier every five minutes
	}
	p.open(s.URL()+"/resources/"+url.PathEscape("payments/eu"), `document.body.dataset.live === "open"`)
	if h := p.num(`Math.min(...[...document.querySelectorAll('[data-testid="chart"] text.axis')].map(t => t.getBoundingClientRect().height))`); h < 12 {
		t.Errorf("the chart's labels are %.1f px tall", h)
	}
	layout := p.str(`(() => {
		const main = document.querySelector("main").getBoundingClientRect();
		const chart = document.querySelector(".chart-card").getBoundingClientRect();
		const lock = document.querySelector('[data-testid="lock-state"]').getBoundingClientRect();
		return [Math.round(chart.width / main.width * 100), Math.round(chart.top - lock.top), Math.round(main.right - chart.right)].join(" ");
	})()`)
	var widthPct, topDiff, rightGap int
	if f := strings.Fields(layout); len(f) == 3 {
		widthPct, _ = strconv.Atoi(f[0])
		topDiff, _ = strconv.Atoi(f[1])
		rightGap, _ = strconv.Atoi(f[2])
	}
	if widthPct < 55 || topDiff != 0 || rightGap > 40 {
		t.Errorf("chart layout (width %% of page, top below the lock card, gap on the right): %s", layout)
	}
	// Every grant's ring is on top where it is drawn, and every write
	// under a ring is still hit at its centre.
	hits := p.str(`(() => {
		const at = (g, dy) => { const b = g.getBoundingClientRect(); return document.elementFromPoint(b.left + b.width / 2, b.top + b.height / 2 + dy * b.height / 2); };
		const grants = [...document.querySelectorAll('[data-testid="chart-grant"]')];
		const writes = [...document.querySelectorAll('[data-testid="chart-accept"]')];
		const overlap = (a, b) => { const p = a.getBoundingClientRect(), q = b.getBoundingClientRect(); return p.left < q.right && q.left < p.right && p.top < q.bottom && q.top < p.bottom; };
		// A ring is painted after every write it overlaps, so it is on top.
		const onTop = g => writes.every(w => !overlap(g, w) || (w.compareDocumentPosition(g) & Node.DOCUMENT_POSITION_FOLLOWING));
		const ringOK = grants.filter(g => g.contains(at(g, -0.92)) && onTop(g)).length;
		const writeOK = writes.filter(w => w.contains(at(w, 0))).length;
		const overlapping = grants.filter(g => writes.some(w => overlap(g, w))).length;
		return [grants.length, ringOK, writes.length, writeOK, overlapping].join(" ");
	})()`)
	f := strings.Fields(hits)
	if len(f) != 5 || f[0] != f[1] || f[2] != f[3] || f[0] == "0" || f[2] == "0" || f[4] == "0" {
		t.Errorf("grants, grants on top, writes, writes visible, grants over a write: %s", hits)
	}
	p.shot("dashboard-resource.png")

	// Sparklines: each scaled to its own range, with its count beside it.
	p.open(s.URL()+"/", `document.querySelectorAll('[data-testid="sparkline"]').length > 2`)
	sparks := p.str(`[...document.querySelectorAll('[data-testid="resource-row"]')].map(r => r.dataset.resource + "=" + r.querySelector('[data-testid="spark-n"]').textContent + ":" + r.querySelector('[data-testid="sparkline"] polyline').getAttribute("points")).join("\n")`)
	counts, shapes := map[string]bool{}, map[string]bool{}
	for _, line := range strings.Split(sparks, "\n") {
		id, rest, _ := strings.Cut(line, "=")
		n, pts, _ := strings.Cut(rest, ":")
		counts[n], shapes[pts] = true, true
		if !strings.HasSuffix(n, " events") && n != "1 event" {
			t.Errorf("%s: the sparkline's number reads %q, without saying what it counts", id, n)
		}
		if id == "payments/eu" && n == "0 events" {
			t.Error("the busiest resource's sparkline counts nothing")
		}
	}
	if len(counts) < 3 || len(shapes) < 2 {
		t.Errorf("sparklines look alike:\n%s", sparks)
	}
}

// Force-expire and reset were shown to everyone with auth off. Now: not
// with auth off unless the server allows it (--dashboard-admin), never to
// a viewer, and for an admin only behind a dialog that names the resource
// and what the action does.
func TestAdminActionsAskFirstInBrowser(t *testing.T) {
	p := newPage(t)
	open := startServer(t)
	open.acquire("jobs/nightly", "runner-1", 60000)
	p.open(open.URL()+"/resources/jobs%2Fnightly", `document.querySelector('[data-testid="lock-state"]') !== null`)
	if n := p.num(`document.querySelectorAll('[data-testid="admin-actions"], [data-action]').length`); n != 0 {
		t.Fatal("admin actions shown with auth off on a server that does not allow them there")
	}

	s := startServer(t, func(m *Main) { m.AdminToken = "adm" })
	key := s.do("POST", "/v1/auth/keys", map[string]any{"name": "watcher", "role": "viewer"})
	viewer, _ := key.Body["secret"].(string)
	tok := tokenOf(s.acquire("jobs/nightly", "runner-1", 60000))
	p.login(s.URL(), viewer)
	p.open(s.URL()+"/resources/jobs%2Fnightly", `document.querySelector('[data-testid="lock-state"]') !== null`)
	if n := p.num(`document.querySelectorAll('[data-testid="admin-actions"]').length`); n != 0 {
		t.Fatal("a viewer sees admin actions")
	}
	p.do("log out", chromedp.Click(chromedp.CSS(`[data-testid="logout"] button`)), waitAcross(`location.pathname === "/login"`))
	p.login(s.URL(), "adm")
	p.open(s.URL()+"/resources/jobs%2Fnightly", `document.body.dataset.live === "open" && document.querySelector('[data-testid="action-expire"]') !== null`)
	p.do("ask before force-expiring", askFirst(expireButton))
	title := p.str(`document.querySelector('[data-testid="confirm-title"]').textContent`)
	effect := p.str(`document.querySelector('[data-testid="confirm-effect"]').textContent`)
	ok := p.str(`document.querySelector('[data-testid="confirm-ok"]').textContent`)
	if title != "Force-expire the lock on “jobs/nightly”?" || !strings.Contains(effect, "runner-1 loses the lock now") ||
		!strings.Contains(effect, "Token "+itoa(tok)+" stays valid at guards") || ok != "Force-expire jobs/nightly" {
		t.Errorf("the dialog: %q / %q / %q", title, effect, ok)
	}
	p.do("cancel", cancelDialog)
	if st := s.do("GET", "/v1/locks/jobs%2Fnightly", nil); st.Body["locked"] != true {
		t.Fatalf("cancel expired the lock: %s", st.Raw)
	}
	p.do("confirm", askFirst(expireButton), confirmDialog,
		waitJS(`document.querySelector('[data-testid="admin-result"]').textContent === "Expired: the lock on jobs/nightly is free."`))
	if st := s.do("GET", "/v1/locks/jobs%2Fnightly", nil); st.Body["locked"] != false {
		t.Fatalf("the lock is still held: %s", st.Raw)
	}
	p.do("ask before resetting", chromedp.SetValue(chromedp.CSS(`#reset-floor`), "500"), askFirst(resetButton))
	title = p.str(`document.querySelector('[data-testid="confirm-title"]').textContent`)
	effect = p.str(`document.querySelector('[data-testid="confirm-effect"]').textContent`)
	if title != "Reset the token counter of “jobs/nightly” to at least 500?" || !strings.Contains(effect, "The next grant on jobs/nightly takes a token above 500") {
		t.Errorf("the reset dialog: %q / %q", title, effect)
	}
	p.do("cancel the reset", cancelDialog)
	if g := tokenOf(s.acquire("jobs/nightly", "runner-2", 1000)); g != tok+1 {
		t.Fatalf("a cancelled reset moved the counter: token %d", g)
	}
}

// The admin actions' buttons, and their confirm dialog: askFirst clicks
// an action's button and waits for the dialog, which confirmDialog and
// cancelDialog answer.
const (
	expireButton = `[data-testid="action-expire"]`
	resetButton  = `[data-testid="action-reset"] button`
	dialogOpen   = `document.querySelector('[data-testid="confirm-dialog"]').open`
)

var (
	confirmDialog = chromedp.Click(chromedp.CSS(`[data-testid="confirm-ok"]`))
	cancelDialog  = chromedp.Steps(chromedp.Click(chromedp.CSS(`[data-testid="confirm-cancel"]`)), waitAcross(`!`+dialogOpen))
)

func askFirst(button string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(chromedp.Click(chromedp.CSS(button)), waitAcross(dialogOpen))
}

var wholeQuantiles = regexp.MustCompile(`^\d+ observed, mean \d+(\.\d)?, p50 (\d+|> \d+\.\d), p99 (\d+|> \d+\.\d)$`)

// The metrics page said "p50 0.6 changes per commit": a commit has at
// least one change. Quantiles of count histograms are whole numbers, and
// no figure on the page is in e-notation.
func TestMetricsFiguresInBrowser(t *testing.T) {
	p := newPage(t)
	s := startServer(t)
	seedStory(s)
	p.open(s.URL()+"/status", `document.querySelector('[data-metric="fenceview_commit_changes"] .value') !== null`)
	rows := p.str(`[...document.querySelectorAll('[data-testid="metrics-series"] tbody tr')].map(r => r.dataset.metric + "\t" + r.querySelector(".value").textContent.trim()).join("\n")`)
	checked := 0
	for _, line := range strings.Split(rows, "\n") {
		name, value, _ := strings.Cut(line, "\t")
		if strings.Contains(value, "e+") || strings.Contains(value, "e-") {
			t.Errorf("%s reads %q", name, value)
		}
		if strings.Contains(value, "observed") && !strings.HasSuffix(name, "_seconds") {
			checked++
			if !wholeQuantiles.MatchString(value) {
				t.Errorf("%s: %q: quantiles of counts are whole numbers", name, value)
			}
		}
	}
	if checked == 0 {
		t.Fatalf("no count histogram on the page:\n%s", rows)
	}
	changes := p.str(`document.querySelector('[data-metric="fenceview_commit_changes"] .value').textContent`)
	if m := regexp.MustCompile(`p50 (\d+)`).FindStringSubmatch(changes); m == nil || m[1] == "0" {
		t.Errorf("changes per commit: %q", changes)
	}
}

// The key's name was grey on navy; a key limited to some prefixes was
// shown a Metrics link that answered 403; sources read key:<id>. Now the
// name is legible, the link is where it works, and sources carry the
// key's name with the id on hover.
func TestKeyNamesInBrowser(t *testing.T) {
	p := newPage(t)
	s := startServer(t, func(m *Main) { m.AdminToken = "adm" })
	writer := s.do("POST", "/v1/auth/keys", map[string]any{"name": "billing-writer", "role": "client"})
	wsecret, _ := writer.Body["secret"].(string)
	wid, _ := writer.Body["id"].(string)
	team := s.do("POST", "/v1/auth/keys", map[string]any{"name": "team-a", "role": "viewer", "resources": []string{"team-a/"}})
	tsecret, _ := team.Body["secret"].(string)
	if wsecret == "" || wid == "" || tsecret == "" {
		t.Fatalf("keys: %s %s", writer.Raw, team.Raw)
	}
	as := func(method, path string, body any) response {
		return s.do(method, path, body, "Authorization", "Bearer "+wsecret)
	}
	acquire := func() int64 {
		r := as("POST", "/v1/locks/billing%2Finvoices/acquire", map[string]any{"holder": "biller", "leaseMs": 1000})
		if r.Status != 200 {
			t.Fatalf("acquire: %d %s", r.Status, r.Raw)
		}
		return tokenOf(r)
	}
	fence := func(tok int64) {
		s.do("POST", "/v1/fence/billing%2Finvoices", nil, "Authorization", "Bearer "+wsecret, "X-Fencing-Token", itoa(tok))
	}
	old := acquire()
	fence(old)
	s.do("POST", "/v1/locks/billing%2Finvoices/expire", nil)
	fence(acquire())
	fence(old) // refused, from key:<id>

	p.login(s.URL(), "adm")
	who := p.str(`document.querySelector('[data-testid="who"]').textContent`)
	if who != "admin token" {
		t.Errorf("logged in as %q", who)
	}
	if c := p.num(contrastJS); c < 4.5 {
		t.Errorf("the key's name has a contrast of %.2f:1 on the header, want at least 4.5:1", c)
	}
	source := "key:" + wid
	feed := `[...document.querySelectorAll('[data-testid="feed-item"] .detail')].filter(d => d.textContent.includes("from "))`
	if got := p.str(feed + `.map(d => d.textContent + "|" + d.title).join("\n")`); !strings.Contains(got, "accepted from billing-writer|"+source) ||
		strings.Contains(got, "from "+source) {
		t.Errorf("feed sources:\n%s", got)
	}
	p.open(s.URL()+"/rejections", `document.querySelector('[data-testid="rejection-source"]') !== null`)
	if got := p.str(`(() => { const c = document.querySelector('[data-testid="rejection-source"]'); return c.textContent + "|" + c.title })()`); got != "billing-writer|"+source {
		t.Errorf("rejection source: %q", got)
	}
	if got := p.str(`[...document.querySelectorAll('[data-testid="source-choice"] option')].map(o => o.textContent + "=" + o.value).join(" ")`); !strings.Contains(got, "billing-writer (1)="+source) {
		t.Errorf("source choices: %q", got)
	}
	// Live: the name stands in for the id in events that arrive later.
	p.open(s.URL()+"/", `document.body.dataset.live === "open"`)
	fence(old)
	p.do("a live refusal names the key",
		waitJS(`[...document.querySelectorAll('[data-testid="refusal"] .detail')].some(d => d.textContent.endsWith("from billing-writer") && d.title === `+jsString(source)+`)`))

	p.do("log out", chromedp.Click(chromedp.CSS(`[data-testid="logout"] button`)), waitAcross(`location.pathname === "/login"`))
	p.login(s.URL(), tsecret)
	if got := p.str(`[...document.querySelectorAll("header nav a")].map(a => a.textContent).join(" ")`); got != "Overview Rejections" {
		t.Errorf("a prefix-limited key's navigation: %q", got)
	}
	if got := p.str(`document.querySelector('[data-testid="who"]').textContent`); got != "team-a" {
		t.Errorf("logged in as %q", got)
	}
}

// contrastJS is the WCAG contrast ratio of the logged-in key's name
// against the header behind it.
const contrastJS = `(() => {
	const rgb = s => s.match(/[\d.]+/g).slice(0, 3).map(Number);
	const lum = c => { const [r, g, b] = c.map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
	const fg = lum(rgb(getComputedStyle(document.querySelector('[data-testid="who"]')).color));
	const bg = lum(rgb(getComputedStyle(document.querySelector("header.top")).backgroundColor));
	return (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
})()`

// The holder page showed current locks only; it now has the holder's
// recent history, its own events and nobody else's.
func TestHolderHistoryInBrowser(t *testing.T) {
	p := newPage(t)
	s := startServer(t)
	s.acquire("queue/a", "worker 7", 60000)
	s.do("POST", "/v1/locks/queue%2Fa/release", map[string]any{"holder": "worker 7"})
	s.acquire("queue/b", "worker 7", 60000)
	s.acquire("queue/c", "worker 7", 1000)
	s.acquire("queue/d", "someone else", 60000)
	s.clock.Advance(2 * time.Second) // queue/c's lease runs out
	s.acquire("queue/c", "someone else", 60000)
	p.open(s.URL()+"/holders/worker%207", `document.querySelector('[data-testid="holder-history"]') !== null`)
	got := p.str(`[...document.querySelectorAll('[data-testid="holder-history-row"]')].map(r => r.dataset.type + " " + r.querySelector("a").textContent).join(", ")`)
	if got != "expire queue/c, grant queue/c, grant queue/b, release queue/a, grant queue/a" {
		t.Errorf("history: %q", got)
	}
	if got := p.str(`[...document.querySelectorAll('[data-testid="holder-row"]')].map(r => r.dataset.resource).join(" ")`); got != "queue/b" {
		t.Errorf("held now: %q", got)
	}
	p.shot("dashboard-holder.png")
}
