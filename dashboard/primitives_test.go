package dashboard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/auth"
)

func (e *env) permit(name, holder string, permits int, lease time.Duration) fenceview.Grant {
	e.t.Helper()
	g, err := e.svc.AcquirePermit(context.Background(), fenceview.PermitRequest{Semaphore: name, Holder: holder, Permits: permits, Lease: lease})
	if err != nil {
		e.t.Fatalf("permit of %q for %q: %v", name, holder, err)
	}
	return g
}

// getAs is get with a key's principal.
func (e *env) getAs(p *auth.Principal, path string) int {
	e.t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", path, nil)
	e.mux.ServeHTTP(rec, req.WithContext(auth.NewContext(req.Context(), p)))
	return rec.Code
}

// A semaphore's page lists every slot, held (holder, token, lease) or
// free, links each to its lock's page, and each slot's page links back.
func TestSemaphorePage(t *testing.T) {
	e := newEnv(t)
	hostileHolder := `<img src=x onerror=alert(1)>`
	g0 := e.permit("jobs", "worker-a", 3, 30*time.Second)
	g1 := e.permit("jobs", hostileHolder, 3, 10*time.Second)
	if g0.ResourceID != "jobs#0" || g1.ResourceID != "jobs#1" {
		t.Fatalf("slots %q %q, want jobs#0 and jobs#1", g0.ResourceID, g1.ResourceID)
	}
	e.clock.Advance(4 * time.Second)

	p := e.get("/semaphores/jobs")
	if p.status != http.StatusOK {
		t.Fatalf("status %d: %s", p.status, p.body)
	}
	if got := p.find("semaphore-name").Text(); got != "jobs" {
		t.Errorf("heading %q", got)
	}
	sem := p.find("semaphore")
	if sem.Find(`[data-field="permits"]`).Text() != "3" || sem.Find(`[data-field="free"]`).Text() != "1" {
		t.Errorf("permits %q, free %q", sem.Find(`[data-field="permits"]`).Text(), sem.Find(`[data-field="free"]`).Text())
	}
	rows := p.find("slot-row")
	if rows.Length() != 3 {
		t.Fatalf("%d slot rows, want 3", rows.Length())
	}
	want := []struct{ state, holder, token, lease, href string }{
		{"held", "worker-a", itoa(g0.Fencing.Token), "26", "/resources/jobs%230"},
		{"held", hostileHolder, itoa(g1.Fencing.Token), "6", "/resources/jobs%231"},
		{"free", "free", "—", "—", "/resources/jobs%232"},
	}
	for i, w := range want {
		row := rows.Eq(i)
		if s, _ := row.Attr("data-state"); s != w.state {
			t.Errorf("slot %d is %s, want %s", i, s, w.state)
		}
		if h := strings.TrimSpace(row.Find(`[data-col="holder"]`).Text()); h != w.holder {
			t.Errorf("slot %d holder %q, want %q", i, h, w.holder)
		}
		if tok := row.Find(`[data-col="token"]`).Text(); tok != w.token {
			t.Errorf("slot %d token %q, want %q", i, tok, w.token)
		}
		if l := row.Find(`[data-col="lease"]`).Text(); !strings.HasPrefix(strings.TrimSpace(l), w.lease) {
			t.Errorf("slot %d lease %q, want %q…", i, l, w.lease)
		}
		if href, _ := row.Find("a").First().Attr("href"); href != w.href {
			t.Errorf("slot %d links to %q, want %q", i, href, w.href)
		}
	}
	if strings.Contains(p.body, hostileHolder) {
		t.Fatal("a holder reached the page unescaped")
	}

	slot := e.get("/resources/jobs%231")
	if href, _ := slot.find("part-of").Find("a").Attr("href"); href != "/semaphores/jobs" {
		t.Errorf("slot page links to %q, want the semaphore", href)
	}
	if got := slot.find("part-of").Text(); !strings.Contains(got, "Slot 1 of the semaphore jobs") {
		t.Errorf("slot page says %q", got)
	}
	if plain := e.get("/resources/jobs%230"); plain.find("part-of").Length() != 1 {
		t.Error("slot 0 has no link to its semaphore")
	}

	for path, status := range map[string]int{
		"/semaphores/never":                       http.StatusNotFound,
		"/semaphores/a%23b":                       http.StatusBadRequest,
		"/semaphores/" + strings.Repeat("x", 151): http.StatusBadRequest,
		"/semaphore?name=":                        http.StatusBadRequest,
		"/semaphore?name=..":                      http.StatusNotFound,
	} {
		if got := e.get(path); got.status != status {
			t.Errorf("%s: %d, want %d", path, got.status, status)
		}
	}

	// A key sees a semaphore when it sees every slot.
	for _, c := range []struct {
		prefixes []string
		status   int
	}{
		{[]string{"jo"}, http.StatusOK},
		{[]string{"jobs#"}, http.StatusOK},
		{[]string{"jobs#1"}, http.StatusForbidden},
		{[]string{"orders"}, http.StatusForbidden},
	} {
		p := &auth.Principal{KeyID: "k", Name: "limited", Role: auth.Viewer, Resources: c.prefixes}
		if got := e.getAs(p, "/semaphores/jobs"); got != c.status {
			t.Errorf("a key limited to %q: %d, want %d", c.prefixes, got, c.status)
		}
	}
}

// An election's page shows its leader (candidate, term = the lock's token,
// value, lease) and every change of leader and value, newest first.
func TestElectionPage(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	hostileValue := `</code><script>alert(1)</script>`
	l1, _, err := e.svc.Campaign(ctx, fenceview.CampaignRequest{Election: "leader", Candidate: "n1", Value: hostileValue, Lease: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	if _, err := e.svc.Proclaim(ctx, "leader", "n1", "v2"); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Resign(ctx, "leader", "n1"); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	l2, _, err := e.svc.Campaign(ctx, fenceview.CampaignRequest{Election: "leader", Candidate: "n2", Value: "v3", Lease: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if l2.Term <= l1.Term {
		t.Fatalf("terms %d then %d", l1.Term, l2.Term)
	}
	e.clock.Advance(5 * time.Second)

	p := e.get("/elections/leader")
	if p.status != http.StatusOK {
		t.Fatalf("status %d: %s", p.status, p.body)
	}
	ld := p.find("leader")
	if ld.Find(`[data-field="candidate"]`).Text() != "n2" || !strings.HasPrefix(ld.Find(`[data-field="term"]`).Text(), itoa(l2.Term)+" ") ||
		ld.Find(`[data-field="value"]`).Text() != "v3" || !strings.HasPrefix(ld.Find(`[data-field="lease"]`).Text(), "15s") {
		t.Errorf("leader card: %q", ld.Text())
	}
	type row struct{ typ, term, candidate, value string }
	var got []row
	p.find("term-row").Each(func(_ int, s *goquery.Selection) {
		typ, _ := s.Attr("data-type")
		got = append(got, row{typ, s.Find(`[data-col="term"]`).Text(), s.Find(`[data-col="candidate"]`).Text(), s.Find(`[data-col="value"]`).Text()})
	})
	want := []row{
		{"grant", itoa(l2.Term), "n2", "v3"},
		{"release", itoa(l1.Term), "n1", ""},
		{"proclaim", itoa(l1.Term), "n1", "v2"},
		{"grant", itoa(l1.Term), "n1", hostileValue},
	}
	if len(got) != len(want) {
		t.Fatalf("terms table %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("terms row %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if p.doc.Find("main script").Length() != 0 || strings.Contains(p.body, hostileValue) {
		t.Fatal("a value reached the page as markup")
	}
	if href, _ := e.get("/resources/leader").find("part-of").Find("a").Attr("href"); href != "/elections/leader" {
		t.Errorf("the election's lock links to %q", href)
	}

	// Nobody leads after a resignation; a plain lock is no election.
	if err := e.svc.Resign(ctx, "leader", "n2"); err != nil {
		t.Fatal(err)
	}
	if p := e.get("/elections/leader"); p.find("no-leader").Length() != 1 {
		t.Errorf("no leader shown as %q", p.find("leader").Text())
	}
	e.acquire("plain", "a", time.Minute)
	for path, status := range map[string]int{
		"/elections/plain":  http.StatusNotFound,
		"/elections/never":  http.StatusNotFound,
		"/election?name=":   http.StatusBadRequest,
		"/election?name=..": http.StatusNotFound,
	} {
		if got := e.get(path); got.status != status {
			t.Errorf("%s: %d, want %d", path, got.status, status)
		}
	}
	limited := &auth.Principal{KeyID: "k", Name: "limited", Role: auth.Viewer, Resources: []string{"orders"}}
	if got := e.getAs(limited, "/elections/leader"); got != http.StatusForbidden {
		t.Errorf("a key without the prefix: %d, want 403", got)
	}
}

// A lease granted with a lock-delay that runs out without a release shows
// the delay's countdown beside the lease; a release shows none.
func TestLockDelayCountdown(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.svc.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "db", Holder: "a", Lease: time.Second, LockDelay: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Second)
	e.svc.Sweep(ctx)
	p := e.get("/resources/db")
	delay := p.find("lock-state").Find(`[data-field="delay"]`)
	if _, hidden := delay.Attr("hidden"); hidden {
		t.Fatal("the lock-delay is hidden while it runs")
	}
	if ms, _ := delay.Find(".countdown").Attr("data-remaining-ms"); ms != "9000" {
		t.Errorf("lock-delay countdown from %q ms, want 9000 (lease end + 10 s - now)", ms)
	}
	if txt := delay.Find(".countdown").Text(); txt != "9s left" {
		t.Errorf("lock-delay reads %q", txt)
	}
	if exp := p.find("history-row").First().Find(".detail").Text(); !strings.Contains(exp, "lock-delay 10,000 ms") {
		t.Errorf("the expire event reads %q", exp)
	}

	e.clock.Advance(10 * time.Second)
	if _, hidden := e.get("/resources/db").find("lock-state").Find(`[data-field="delay"]`).Attr("hidden"); !hidden {
		t.Error("the lock-delay still shows after it ended")
	}
	if _, err := e.svc.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "db", Holder: "b", Lease: time.Second, LockDelay: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Release(ctx, "db", "b"); err != nil {
		t.Fatal(err)
	}
	if _, hidden := e.get("/resources/db").find("lock-state").Find(`[data-field="delay"]`).Attr("hidden"); !hidden {
		t.Error("a released lock shows a lock-delay")
	}
}
