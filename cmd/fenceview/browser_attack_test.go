package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// attackPage is what a hostile site serves: it tries every way a page can
// change fenceview's state without reading an answer. fetch with no-cors
// and a text/plain body needs no CORS preflight, so before browser safety
// each of these reached the handlers.
const attackPage = `<!DOCTYPE html><title>loading</title><body><script>
const T = "TARGET";
const post = (path, body) => fetch(T + path, {method: "POST", mode: "no-cors", credentials: "include",
  headers: {"Content-Type": "text/plain"}, body}).catch(() => {});
const ws = (path, msg) => new Promise(done => {
  let s;
  try { s = new WebSocket(T.replace("http", "ws") + path); } catch (e) { return done(); }
  s.onopen = () => { if (msg) s.send(msg); setTimeout(() => { s.close(); done(); }, 300); };
  s.onerror = s.onclose = () => done();
});
Promise.all([
  post("/v1/locks/victim-res/release", '{"holder":"victim"}'),
  post("/v1/locks/victim-res/acquire", '{"holder":"evil","leaseMs":3600000}'),
  post("/v1/locks/victim-res/expire", ''),
  post("/v1/locks/evil-res/acquire", '{"holder":"evil"}'),
  post("/v1/fence/victim-res", '{"token":9000}'),
  post("/v1/decisions", '{"decisions":[{"resourceId":"victim-res","token":9223372036854775807,"accepted":true,"source":"evil"}]}'),
  ws("/v1/rpc", '{"id":1,"op":"acquire","resource":"evil-rpc","holder":"evil"}'),
  ws("/v1/events", ''),
]).then(() => { document.title = "done"; });
</script></body>`

// A page from another origin, in a real browser, tries to change state
// through no-cors fetches and websockets: nothing changes.
func TestCrossOriginPageChangesNothing(t *testing.T) {
	ctx := browser(t)
	s := startServer(t)
	s.acquire("victim-res", "victim", 3600000)
	before := snapshot(s) + string(s.do("GET", "/v1/locks/victim-res", nil).Raw)
	seqBefore := s.Service.LastSeq()

	// "localhost" is another site than "127.0.0.1": the browser sends
	// Origin and Sec-Fetch-Site: cross-site, as from any other web site.
	evil := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(strings.ReplaceAll(attackPage, "TARGET", s.URL())))
	}))
	evil.Start()
	defer evil.Close()
	page := strings.Replace(evil.URL, "127.0.0.1", "localhost", 1) + "/"
	if err := chromedp.Do(ctx, chromedp.Navigate(page), waitJS(`document.title === "done"`)); err != nil {
		t.Fatalf("attack page: %v", err)
	}
	if after := snapshot(s) + string(s.do("GET", "/v1/locks/victim-res", nil).Raw); after != before || s.Service.LastSeq() != seqBefore {
		t.Fatalf("a cross-origin page changed state:\nbefore %s\nafter  %s", before, after)
	}
	for _, id := range []string{"evil-res", "evil-rpc"} {
		if _, err := s.Service.Resource(id); err == nil {
			t.Fatalf("the page created %s", id)
		}
	}
}

// With auth on, the dashboard in a real browser: the login form, the live
// feed over the session cookie, the key's resources only, and logout.
func TestDashboardLoginInBrowser(t *testing.T) {
	p := newPage(t)
	ctx := p.ctx
	s := startServer(t, func(m *Main) { m.AdminToken = "adm" })
	key := s.do("POST", "/v1/auth/keys", map[string]any{"name": "team-a", "role": "viewer", "resources": []string{"team-a/"}})
	secret, _ := key.Body["secret"].(string)
	if key.Status != 201 || secret == "" {
		t.Fatalf("create key: %d %s", key.Status, key.Raw)
	}
	s.acquire("team-a/orders", "worker-a", 60000)
	s.acquire("team-b/payroll", "worker-b", 60000)
	p.do("log in",
		chromedp.Navigate(s.URL()+"/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="login"]`)),
		chromedp.SendKeys(chromedp.CSS(`#key`), secret),
		chromedp.Click(chromedp.CSS(`[data-testid="login-submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="resources"]`)),
		waitJS(`document.body.dataset.live === "open"`),
	)
	s.acquire("team-b/payroll-2", "worker-b", 60000)
	s.acquire("team-a/invoices", "worker-a", 60000)
	p.do("see the own team's grant live, not the other's",
		waitJS(`[...document.querySelectorAll('[data-testid="feed-item"]')].some(li => li.dataset.resource === "team-a/invoices")`),
	)
	body, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.textContent + document.cookie`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(body, "team-b") || strings.Contains(body, "payroll") || strings.Contains(body, secret) || strings.Contains(body, "fenceview_session") {
		t.Fatal("the page shows another team's resources, the key, or a script-readable session cookie")
	}
	p.do("log out",
		chromedp.Click(chromedp.CSS(`[data-testid="logout"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="login"]`)),
		chromedp.Navigate(s.URL()+"/rejections"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="login"]`)),
	)
}
