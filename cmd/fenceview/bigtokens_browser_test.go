package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/chromedp/chromedp"
)

// Tokens are int64, and a JavaScript number holds integers exactly only
// up to 2^53: the live dashboard read 9007199254740993 as
// 9007199254740992, and compared marks as rounded numbers. Above 2^53 the
// feed, the table, the alarm banner and the admin reset keep every digit,
// and the banner's words follow the exact comparison.
func TestTokensAbove2To53InBrowser(t *testing.T) {
	p := newPage(t)
	s := startServer(t, func(m *Main) { m.DashboardAdmin = true })
	p.open(s.URL()+"/", `document.body.dataset.live === "open"`)

	// The counter at 2^53-1: w-1 is granted 2^53, which a double holds.
	const id, path = "ledger/big", "/v1/locks/ledger%2Fbig"
	if r := s.do("POST", path+"/reset", map[string]any{"floor": int64(1<<53 - 1)}); r.Status != 200 {
		t.Fatalf("reset: %d %s", r.Status, r.Raw)
	}
	s.acquire(id, "w-1", 60000)
	// A guard reports 2^53+1, one above the last token issued, which a
	// double reads as 2^53: the counter alarm, whose words depend on
	// which of the two is higher.
	report := func(res string, token int64) {
		t.Helper()
		r := s.do("POST", "/v1/decisions", map[string]any{"decisions": []map[string]any{
			{"resourceId": res, "token": token, "accepted": true, "source": "plugin:pg"},
		}})
		if r.Status != 200 {
			t.Fatalf("report %d on %s: %d %s", token, res, r.Status, r.Raw)
		}
	}
	report(id, 1<<53+1)
	banner := `document.querySelector('[data-testid="banner-behind"] li[data-resource="` + id + `"]')`
	alarmItem := func(res string) string {
		return `document.querySelector('[data-testid="feed-item"][data-type="alarm"][data-resource="` + res + `"]')`
	}
	p.do("see the alarm live", waitJS(banner+` !== null`), waitJS(alarmItem(id)+` !== null`))
	if got, want := p.str(banner+`.textContent.trim()`), id+": token 9,007,199,254,740,993 in use at a guard, last token issued 9,007,199,254,740,992"; got != want {
		t.Errorf("banner:\n got %q\nwant %q", got, want)
	}
	if got, want := p.str(alarmItem(id)+`.querySelector(".detail").textContent`), "token 9,007,199,254,740,993 in use at a guard, last token issued 9,007,199,254,740,992 (counter-behind) from plugin:pg"; got != want {
		t.Errorf("the feed's alarm:\n got %q\nwant %q", got, want)
	}

	// The next grant takes 2^53+1.
	s.do("POST", path+"/release", map[string]any{"holder": "w-1"})
	s.acquire(id, "w-2", 60000)
	row := rowOf(id)
	p.do("see the grant live", waitJS(row+`?.querySelector('[data-col="holder"]').textContent === "w-2"`))
	if got := p.str(row + `.querySelector('[data-col="last"]').textContent`); got != "9,007,199,254,740,993" {
		t.Errorf("the row's last token reads %q", got)
	}
	grant := p.str(`[...document.querySelectorAll('[data-testid="feed-item"][data-type="grant"]')].map(li => li.querySelector(".detail").textContent).join("|")`)
	if want := "token 9,007,199,254,740,993 to w-2|token 9,007,199,254,740,992 to w-1"; grant != want {
		t.Errorf("the feed's grants:\n got %q\nwant %q", grant, want)
	}

	// A report above 2^62 on a resource this server never issued for: the
	// mark stays at 2^62, and saying so takes comparing above it exactly.
	report("ledger/moved", 1<<62+1)
	p.do("see the foreign mark live", waitJS(alarmItem("ledger/moved")+` !== null`))
	if got, want := p.str(alarmItem("ledger/moved")+`.querySelector(".detail").textContent`), "token 4,611,686,018,427,387,905 in use at a guard, above any mark a report may set; the mark stays at 4,611,686,018,427,387,904 (foreign-mark) from plugin:pg"; got != want {
		t.Errorf("the feed's foreign mark:\n got %q\nwant %q", got, want)
	}

	// The admin reset sends the floor as typed and shows the answer whole.
	p.open(s.URL()+"/resources/ledger%2Fbig", `document.body.dataset.live === "open"`)
	p.do("reset the counter to 2^53+3",
		chromedp.SetValue(chromedp.CSS(`#reset-floor`), "9007199254740995"),
		askFirst(resetButton),
		confirmDialog,
		waitAcross(`document.querySelector('[data-testid="admin-result"]').textContent !== ""`),
	)
	if got := p.str(`document.querySelector('[data-testid="admin-result"]').textContent`); got != "Reset: the next grant takes token 9,007,199,254,740,996." {
		t.Errorf("the reset's answer reads %q", got)
	}
	if got := exactField(t, s.do("GET", "/v1/resources/ledger%2Fbig", nil), "lastToken"); got != "9007199254740995" {
		t.Errorf("the counter after a reset to 9007199254740995 is %s", got)
	}
	last := `document.querySelector('[data-testid="lock-state"] [data-field="last"]').textContent`
	p.do("see the reset live",
		waitJS(`document.querySelector('[data-testid="history-row"]').dataset.type === "reset"`),
		waitJS(`!`+last+`.includes("behind")`)) // the reset cleared the alarm
	if got := p.str(last); got != "9,007,199,254,740,995" {
		t.Errorf("the lock card's last token reads %q", got)
	}
}

// exactField is an integer field of an answer in its decimal digits (the
// response's Body holds numbers as float64).
func exactField(t *testing.T, r response, key string) string {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(r.Raw))
	d.UseNumber()
	var body map[string]any
	if err := d.Decode(&body); err != nil {
		t.Fatalf("%s: %v", r.Raw, err)
	}
	n, _ := body[key].(json.Number)
	return string(n)
}
