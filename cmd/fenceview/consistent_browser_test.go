package main

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fenceview/fenceview/internal/clock"
	"github.com/fenceview/fenceview/internal/wire"
)

// One page, one story: every count on the overview follows the same live
// updates, in words that agree with the number; the sparklines' window is
// said and loses nothing the page shows; the rejection filter takes times
// in the zone its rows show; the counter alarm's banner says what is true
// of a resource this server never issued a token for; and a row carries
// its date only when it is not today, as docs/dashboard.md says.

// The "locks held" card went up live while the table's "1 lock held of
// 1" stayed as drawn, and one accepted write read "1 writes accepted".
func TestEveryCountFollowsTheRowsInBrowser(t *testing.T) {
	p := newPage(t)
	s := startServer(t)
	tok := tokenOf(s.acquire("a", "w", 60000))
	p.open(s.URL()+"/", `document.body.dataset.live === "open"`)
	counts := `["resources", "held", "accepted", "rejected"].map(k => { const n = document.querySelector('[data-testid="stat-' + k + '"]'); return n.textContent + " " + n.parentNode.querySelector(".stat-l").textContent; }).join(" | ") + " / " + document.querySelector('[data-testid="table-count"]').textContent.replace(/\s+/g, " ").trim()`
	if got, want := p.str(counts), "1 resource | 1 lock held | 0 writes accepted | 0 writes refused / 1 resource · 1 lock held of 1"; got != want {
		t.Errorf("as drawn:\n got %s\nwant %s", got, want)
	}
	s.fence("a", tok)
	s.acquire("b", "v", 60000)
	want := "2 resources | 2 locks held | 1 write accepted | 0 writes refused / 2 resources · 2 locks held of 2"
	p.do("every count follows the new lock and the write", waitJS(counts+` === `+jsString(want)))
	s.do("POST", "/v1/locks/a/release", map[string]any{"holder": "w"})
	want = "2 resources | 1 lock held | 1 write accepted | 0 writes refused / 2 resources · 1 lock held of 2"
	p.do("every count follows the release", waitJS(counts+` === `+jsString(want)))
}

// "Last hour ≥ 100 events" left out the minute under way, so the count
// shrank as that minute filled (and an event just made read "0 events").
// The sparklines now count the hour up to the page's drawing, which the
// column's header names.
func TestSparklineHourEndsAtTheDrawingInBrowser(t *testing.T) {
	p := newPage(t)
	s := startServer(t)
	cycle := func(id string, n int) { // n grants and releases: 2n events
		for range n {
			s.acquire(id, "w", 60000)
			s.do("POST", "/v1/locks/"+id+"/release", map[string]any{"holder": "w"})
		}
	}
	s.clock.Advance(t0.Truncate(time.Minute).Add(time.Minute).Sub(t0)) // the start of a minute
	cycle("busy", 60)                                                  // 120 events, earlier in the hour
	s.clock.Advance(10*time.Minute + 20*time.Second)
	cycle("busy", 50) // 100 events in the minute under way
	s.acquire("calm", "w", 60000)
	spark := func(id string) string {
		return p.str(rowOf(id) + `.querySelector('[data-testid="spark-n"]').textContent`)
	}
	for _, more := range []int{0, 25} {
		cycle("busy", more) // the same minute runs on, busier
		p.open(s.URL()+"/", `document.querySelector('[data-testid="spark-n"]') !== null`)
		if got := spark("busy"); got != "≥ 200 events" {
			t.Errorf("after %d more grants this minute, the busy resource's sparkline reads %q, want ≥ 200 events", more, got)
		}
		if got := spark("calm"); got != "1 event" {
			t.Errorf("the calm resource's grant, made before the page was drawn, reads %q", got)
		}
		header := `document.querySelector('[data-testid="spark-window"]')`
		if got, want := p.str(header+`.querySelector("time").getAttribute("datetime")`), wire.FormatTime(s.clock.Now()); got != want {
			t.Errorf("the sparklines' hour ends at %s, want the page's drawing, %s", got, want)
		}
		if got := p.str(header + `.textContent`); !strings.HasPrefix(got, "Hour to ") || strings.Contains(got, "UTC") {
			t.Errorf("the sparklines' column reads %q", got)
		}
	}
}

// The rejections' rows read in the viewer's zone, their filter in UTC:
// now the filter shows, takes and says the viewer's zone too.
func TestRejectionFilterInTheViewersZoneInBrowser(t *testing.T) {
	p := &pageT{t: t, ctx: browser(t, chromedp.Env("TZ=Asia/Kolkata"), chromedp.Flag("lang", "en-US"))}
	s := startServer(t)
	kolkata := time.FixedZone("IST", 5*3600+1800)
	refuse := func() time.Time {
		at := s.clock.Now()
		old := tokenOf(s.acquire("r", "w", 1000))
		s.clock.Advance(2 * time.Second)
		s.fence("r", tokenOf(s.acquire("r", "v", 1000)))
		s.clock.Advance(2 * time.Second)
		s.fence("r", old) // refused: stale
		return at
	}
	first := refuse()
	s.clock.Advance(2 * time.Hour)
	refuse()
	since := first.Add(time.Hour).UTC()
	p.open(s.URL()+"/rejections?since="+since.Format("2006-01-02T15:04:05"), `document.querySelector('[data-testid="filters"]') !== null`)
	form := func() string {
		return p.str(`["since", "until"].map(k => document.querySelector('label[for="f-' + k + '"]').textContent + "=" + document.getElementById("f-" + k).value).join(" ")`)
	}
	// The zone as the browser names it (Chromium says Asia/Calcutta).
	zone := p.str(`Intl.DateTimeFormat().resolvedOptions().timeZone`)
	if zone != "Asia/Kolkata" && zone != "Asia/Calcutta" {
		t.Fatalf("the browser's zone is %q", zone)
	}
	if got, want := form(), "From ("+zone+")="+since.In(kolkata).Format("2006-01-02T15:04:05")+" Until ("+zone+")="; got != want {
		t.Errorf("the filter reads\n %s\nwant\n %s", got, want)
	}
	rows := `document.querySelectorAll('[data-testid="rejection-row"]').length`
	if n := p.num(rows); n != 1 {
		t.Fatalf("%v rows since %s, want the later refusal", n, since)
	}
	// An hour before the first refusal, typed as the viewer reads it.
	typed := first.Add(-time.Hour).In(kolkata).Format("2006-01-02T15:04:05")
	p.do("filter from a time typed in the viewer's zone",
		chromedp.SetValue(chromedp.CSS(`#f-since`), typed),
		chromedp.Click(chromedp.CSS(`[data-testid="filters"] button[type="submit"]`)),
		waitAcross(`new URLSearchParams(location.search).get("since") !== `+jsString(since.Format("2006-01-02T15:04:05"))+` && document.querySelectorAll('[data-testid="rejection-row"]').length > 0`))
	if got, want := p.str(`new URLSearchParams(location.search).get("since")`), wire.FormatTime(first.Add(-time.Hour)); got != want {
		t.Errorf("the filter sent since=%s, want %s (%s in Asia/Kolkata)", got, want, typed)
	}
	if n := p.num(rows); n != 2 {
		t.Errorf("%v rows from an hour before the first refusal, want both", n)
	}
	if got := form(); !strings.HasPrefix(got, "From ("+zone+")="+typed+" ") {
		t.Errorf("after filtering, the form reads %s", got)
	}
}

// A report above 2^62 on a resource this server never issued a token for
// raised the counter alarm under the title "issuer behind a recorded
// high-water mark", and "last token issued 0": nothing was ever issued.
func TestForeignMarkBannerSaysWhatIsTrueInBrowser(t *testing.T) {
	p := newPage(t)
	s := startServer(t)
	p.open(s.URL()+"/", `document.body.dataset.live === "open"`)
	r := s.do("POST", "/v1/decisions", map[string]any{"decisions": []map[string]any{
		{"resourceId": "ledger/moved", "token": int64(1<<62 + 5), "accepted": true, "source": "plugin:pg"},
	}})
	if r.Status != 200 {
		t.Fatalf("report: %d %s", r.Status, r.Raw)
	}
	item := `document.querySelector('[data-testid="banner-behind"] li[data-resource="ledger/moved"]')`
	title := `document.querySelector('[data-testid="banner-behind"] strong').textContent`
	want := "ledger/moved: token 4,611,686,018,427,387,909 in use at a guard before this server issued any; the mark stays at 4,611,686,018,427,387,904"
	check := func(when string) {
		if got := p.str(item + `.textContent.replace(/\s+/g, " ").trim()`); got != want {
			t.Errorf("%s, the banner reads\n %q\nwant\n %q", when, got, want)
		}
		if got := p.str(title); strings.Contains(got, "behind") || !strings.Contains(got, "above this server's token counter") {
			t.Errorf("%s, the banner's title reads %q", when, got)
		}
	}
	p.do("see the alarm live", waitJS(item+` !== null`))
	check("live")
	p.open(s.URL()+"/resources/ledger%2Fmoved", `document.querySelector('[data-testid="lock-state"]') !== null`)
	check("drawn by the server")
	if got := p.str(`document.querySelector('[data-testid="lock-state"] [data-field="alarm"]').textContent.trim()`); got != strings.TrimPrefix(want, "ledger/moved: ") {
		t.Errorf("the Lock card's alarm reads %q", got)
	}
}

// docs/dashboard.md says a row's time carries its date when it is not
// today; the resource's history and the rejections carried it always.
func TestDateOnlyWhenNotTodayInBrowser(t *testing.T) {
	p := newPage(t)
	// The server's clock two days back, then at the wall clock: the
	// browser's "today" is the wall clock's.
	s := startServer(t, func(m *Main) { m.Clock = clock.NewFake(time.Now().Add(-48 * time.Hour)) })
	fake := s.clock
	refuse := func() {
		old := tokenOf(s.acquire("r", "w", 1000))
		fake.Advance(2 * time.Second)
		s.fence("r", tokenOf(s.acquire("r", "v", 1000)))
		s.fence("r", old)
	}
	refuse()
	fake.Advance(48*time.Hour - 2*time.Second)
	refuse()
	// Each row's time: whether it is today in the viewer's zone, and
	// whether it reads with its date; the kinds seen.
	rule := func(rows string) string {
		return p.str(`(() => {
			const date = d => d.toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" });
			const seen = new Set();
			document.querySelectorAll(` + jsString(rows) + `).forEach(t => {
				const d = new Date(t.getAttribute("datetime"));
				seen.add((d.toDateString() === new Date().toDateString() ? "today" : "earlier") + (t.textContent.startsWith(date(d)) ? " with its date" : " without"));
			});
			return [...seen].sort().join(", ");
		})()`)
	}
	for _, c := range []struct{ page, rows, want string }{
		{"/resources/r", `[data-testid="history-row"] time`, "earlier with its date, today without"},
		{"/rejections", `[data-testid="rejection-row"] time`, "earlier with its date, today without"},
		{"/", `[data-testid="feed-item"] time`, "earlier with its date, today without"},
	} {
		p.open(s.URL()+c.page, `document.querySelector(`+jsString(c.rows)+`) !== null`)
		if got := rule(c.rows); got != c.want {
			t.Errorf("%s: %s, want %s", c.page, got, c.want)
		}
	}
}
