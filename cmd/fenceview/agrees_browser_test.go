package main

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The dashboard agrees with itself in the browser: every time, the
// charts' axes and the rows alike, in the viewer's zone; numbers the
// script writes in the server's format; the mark's step line flat across a
// superseded refusal. The server's side is in dashboard/agrees_test.go.

// A viewer in India (UTC+5:30) sees the chart's axis and the rows at the
// same local time: the server writes UTC, the script formats all of it.
func TestTimesInTheViewersZoneInBrowser(t *testing.T) {
	p := &pageT{t: t, ctx: browser(t, chromedp.Env("TZ=Asia/Kolkata"), chromedp.Flag("lang", "en-US"))}
	s := startServer(t)
	kolkata := time.FixedZone("IST", 5*3600+1800) // no daylight saving
	tok := tokenOf(s.acquire("r", "w", 60000))
	s.clock.Advance(10 * time.Second)
	s.fence("r", tok)
	s.clock.Advance(2 * time.Minute)
	local := t0.In(kolkata).Format("03:04:05 PM")
	if local == t0.UTC().Format("03:04:05 PM") {
		t.Fatal("the zones agree: the test would prove nothing")
	}

	p.open(s.URL()+"/resources/r", `document.body.dataset.live === "open"`)
	tick := p.str(`document.querySelector('[data-testid="chart-xtick"]').textContent`)
	row := p.str(`[...document.querySelectorAll('[data-testid="history-row"] time')].at(-1).textContent`)
	if tick != local {
		t.Errorf("the chart's first time reads %q, want %q (%s in Asia/Kolkata)", tick, local, t0.Format(time.TimeOnly))
	}
	if !strings.Contains(row, ", "+local+" ·") {
		t.Errorf("the first grant's row reads %q, the axis %q", row, tick)
	}
	if all := p.str(`[...document.querySelectorAll('[data-testid="chart-xtick"], time')].map(e => e.textContent).join("|")`); strings.Contains(all, "UTC") {
		t.Errorf("a time still reads in UTC: %s", all)
	}

	// The overview: the rates' axis, the cards' window and the feed.
	end := s.clock.Now().Truncate(time.Minute)
	p.open(s.URL()+"/", `document.body.dataset.live === "open"`)
	if got, want := p.str(`[...document.querySelectorAll('[data-testid="rate-xtick"]')].at(-1).textContent`), end.In(kolkata).Format("03:04 PM"); got != want {
		t.Errorf("the rates chart ends at %q, want %q", got, want)
	}
	if got, want := p.str(`document.querySelector('[data-testid="rate-window"] time:last-of-type').textContent`), end.In(kolkata).Format("03:04:05 PM"); got != want {
		t.Errorf("the cards' window ends at %q, want %q", got, want)
	}
	if got := p.str(`[...document.querySelectorAll('[data-testid="feed-item"][data-type="grant"] time')].at(-1).textContent`); !strings.Contains(got, local) {
		t.Errorf("the feed's grant reads %q, want %q in it", got, local)
	}

	// Numbers the script writes read as the server's: grouped.
	r := s.do("POST", "/v1/decisions", map[string]any{"decisions": []map[string]any{
		{"resourceId": "big", "token": 12345, "accepted": true, "source": "db"},
	}})
	if r.Status != 200 {
		t.Fatalf("report: %d %s", r.Status, r.Raw)
	}
	p.do("see the big token live",
		waitJS(`[...document.querySelectorAll('[data-testid="feed-item"][data-resource="big"] .detail')].some(d => d.textContent === "token 12,345 accepted from db")`),
		waitJS(rowOf("big")+`?.querySelector('[data-col="hwm"]').textContent === "12,345"`),
	)
}

// The mark's step line stays flat across a superseded refusal, whose
// required token is the last one issued, not a mark, and rises at the
// accepted write that raised the mark: checked on the drawn geometry.
func TestStepLineAfterSupersededInBrowser(t *testing.T) {
	p := newPage(t)
	s := startServer(t)
	t1 := tokenOf(s.acquire("r", "a", 60000))
	s.fence("r", t1)
	s.do("POST", "/v1/locks/r/release", map[string]any{"holder": "a"})
	s.clock.Advance(time.Second)
	t2 := tokenOf(s.acquire("r", "b", 60000))
	s.clock.Advance(time.Second)
	if r := s.do("POST", "/v1/fence/r", map[string]any{"token": t1, "mode": "current"}); r.Status != 409 || r.Body["reason"] != "superseded" {
		t.Fatalf("want superseded: %d %s", r.Status, r.Raw)
	}
	s.clock.Advance(time.Second)
	s.fence("r", t2)

	p.open(s.URL()+"/resources/r", `document.querySelector('[data-testid="chart-hwm"]') !== null`)
	if got := p.str(`document.querySelector('[data-testid="lock-state"] [data-field="hwm"]').textContent`); got != itoa(t2) {
		t.Fatalf("the Lock card's mark %q", got)
	}
	var g struct {
		A1, A2, R []float64
		AtReject  []float64
		AtA2      []float64
	}
	raw := p.str(`(() => {
		const path = document.querySelector('[data-testid="chart-hwm"]');
		const at = g => g.getAttribute("transform").match(/translate\(([-\d.]+) ([-\d.]+)\)/).slice(1).map(Number);
		const [a1, a2] = [...document.querySelectorAll('[data-testid="chart-accept"]')].map(at);
		const [r] = [...document.querySelectorAll('[data-testid="chart-reject"]')].map(at);
		// The line's heights where it passes x: more than one is a step there.
		const ys = x => {
			const out = new Set(), n = path.getTotalLength();
			for (let l = 0; l <= n; l += 0.25) {
				const q = path.getPointAtLength(l);
				if (Math.abs(q.x - x) < 0.3) out.add(Math.round(q.y * 10) / 10);
			}
			return [...out].sort((a, b) => a - b);
		};
		return JSON.stringify({A1: a1, A2: a2, R: r, AtReject: ys(r[0]), AtA2: ys(a2[0])});
	})()`)
	if err := json.Unmarshal([]byte(raw), &g); err != nil || len(g.A1) != 2 || len(g.A2) != 2 || len(g.R) != 2 {
		t.Fatalf("chart geometry %s: %v", raw, err)
	}
	span := func(ys []float64) string { // a step's heights, from and to
		if len(ys) == 0 {
			return "none"
		}
		return ftoa(ys[0]) + " to " + ftoa(ys[len(ys)-1])
	}
	if !slices.Equal(g.AtReject, []float64{g.A1[1]}) {
		t.Errorf("at the superseded refusal (x %.1f) the line spans heights %s, want only the first accept's %.1f", g.R[0], span(g.AtReject), g.A1[1])
	}
	if !slices.Contains(g.AtA2, g.A1[1]) || !slices.Contains(g.AtA2, g.A2[1]) {
		t.Errorf("at the second accept (x %.1f) the line spans heights %s, want %.1f to %.1f", g.A2[0], span(g.AtA2), g.A2[1], g.A1[1])
	}
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }
