package main

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fenceview/fenceview"
)

// browserSteps runs chromedp steps and evaluates expressions, failing the
// test on an error.
type browserSteps struct {
	t   *testing.T
	ctx context.Context
}

func (b browserSteps) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// openLive navigates to url and waits for the element selector names and
// for the page's live stream to be open; it marks the document so that a
// later step can tell a full reload from a live update.
func (b browserSteps) openLive(what, url, selector string) {
	b.t.Helper()
	b.do(what,
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS(selector)),
		waitJS(`document.body.dataset.live === "open"`),
		js(`window.__sameDocument = "yes"`),
	)
}

// shot saves a screenshot as docs/<name> with -update-screenshot.
func (b browserSteps) shot(name string) {
	b.t.Helper()
	img, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatal(err)
	}
	saveDoc(b.t, name, img)
}

func (b browserSteps) eval(expr string) string {
	b.t.Helper()
	return evaluate[string](b.t, b.ctx, expr)
}

// slotRow is a semaphore page's row of a slot, as JavaScript.
func slotRow(n int) string {
	return `document.querySelector('[data-testid="slot-row"][data-slot="` + itoa(int64(n)) + `"]')`
}

// A semaphore's page in Chromium: its slots held and free, kept live as
// permits are taken and given back, hostile holders shown as text, and
// the links between the semaphore and its slots' pages.
func TestSemaphorePageInBrowser(t *testing.T) {
	b := browserSteps{t, browser(t)}
	s := startServer(t)
	ctx := context.Background()
	g0, err := s.Service.AcquirePermit(ctx, fenceview.PermitRequest{Semaphore: "jobs", Holder: "worker-a", Permits: 2, Lease: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b.openLive("open the semaphore", s.URL()+"/semaphores/jobs", `[data-testid="slots"]`)
	if got := b.eval(slotRow(0) + `.dataset.state + " " + ` + slotRow(0) + `.querySelector('[data-col="holder"]').textContent + " " + ` +
		slotRow(0) + `.querySelector('[data-col="token"]').textContent`); got != "held worker-a "+itoa(g0.Fencing.Token) {
		t.Errorf("slot 0 reads %q", got)
	}
	if got := b.eval(slotRow(1) + `.dataset.state`); got != "free" {
		t.Errorf("slot 1 is %q before anyone takes it", got)
	}
	if got := b.eval(slotRow(0) + `.querySelector('.countdown').dataset.remainingMs + " " + /^\d+s left$/.test(` + slotRow(0) + `.querySelector('.countdown').textContent)`); got != "30000 true" {
		t.Errorf("slot 0's lease: %q", got)
	}

	b.shot("dashboard-semaphore.png")

	hostile := `<b>x</b><img src=x onerror="document.body.dataset.pwned=1">`
	g1, err := s.Service.AcquirePermit(ctx, fenceview.PermitRequest{Semaphore: "jobs", Holder: hostile, Permits: 2, Lease: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b.do("see the second permit taken, live",
		waitJS(slotRow(1)+`?.dataset.state === "held"`),
		waitJS(`document.querySelector('[data-field="free"]').textContent === "0"`),
	)
	if got := b.eval(slotRow(1) + `.querySelector('[data-col="holder"]').textContent`); got != hostile {
		t.Errorf("slot 1's holder reads %q", got)
	}
	if got := b.eval(slotRow(1) + `.querySelector('[data-col="token"]').textContent`); got != itoa(g1.Fencing.Token) {
		t.Errorf("slot 1's token reads %q", got)
	}
	if n := b.eval(`String(document.querySelectorAll("main b, main img").length) + (document.body.dataset.pwned || "")`); n != "0" {
		t.Fatalf("markup from a holder was parsed: %q", n)
	}
	if _, err := s.Service.ReleasePermit(ctx, "jobs", "worker-a", 0); err != nil {
		t.Fatal(err)
	}
	b.do("see slot 0 given back, live", waitJS(slotRow(0)+`?.dataset.state === "free"`))
	if b.eval(`window.__sameDocument`) != "yes" {
		t.Fatal("the page reloaded to show the changes")
	}

	b.do("follow slot 1 to its lock's page and back",
		js(slotRow(1)+`.querySelector("a").setAttribute("data-target", "slot")`),
		chromedp.Click(chromedp.CSS(`a[data-target="slot"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="part-of"]`)),
	)
	if got := b.eval(`document.querySelector('[data-testid="resource-id"]').textContent + " | " + document.querySelector('[data-testid="part-of"]').textContent`); got != "jobs#1 | Slot 1 of the semaphore jobs" {
		t.Errorf("the slot's page reads %q", got)
	}
	b.do("back to the semaphore",
		chromedp.Click(chromedp.CSS(`[data-testid="part-of"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="slots"]`)),
	)
	if got := b.eval(`location.pathname`); got != "/semaphores/jobs" {
		t.Errorf("the slot's page links to %q", got)
	}
}

// An election's page in Chromium: the leader, its term and value, and
// every change of leader and value arriving live, values as text.
func TestElectionPageInBrowser(t *testing.T) {
	b := browserSteps{t, browser(t)}
	s := startServer(t)
	ctx := context.Background()
	l1, _, err := s.Service.Campaign(ctx, fenceview.CampaignRequest{Election: "primary", Candidate: "node-1", Value: "10.0.0.1:5432", Lease: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b.openLive("open the election", s.URL()+"/elections/primary", `[data-testid="leader"]`)
	field := func(name string) string {
		return `document.querySelector('[data-testid="leader"] [data-field="` + name + `"]')?.textContent`
	}
	if got := b.eval(field("candidate") + ` + " " + ` + field("value")); got != "node-1 10.0.0.1:5432" {
		t.Errorf("leader card reads %q", got)
	}
	if got := b.eval(field("term")); got != itoa(l1.Term)+" (the lock's token: guards refuse an earlier term's writes)" {
		t.Errorf("term reads %q", got)
	}

	if _, err := s.Service.Proclaim(ctx, "primary", "node-1", "10.0.0.1:6432"); err != nil {
		t.Fatal(err)
	}
	b.do("see the proclaim live",
		waitJS(field("value")+` === "10.0.0.1:6432"`),
		waitJS(`document.querySelector('[data-testid="term-row"]').dataset.type === "proclaim"`),
	)
	b.shot("dashboard-election.png")
	if err := s.Service.Resign(ctx, "primary", "node-1"); err != nil {
		t.Fatal(err)
	}
	b.do("see nobody lead", waitJS(`document.querySelector('[data-testid="no-leader"]') !== null`))
	hostile := `<script>document.body.dataset.pwned=1</script><i>v</i>`
	l2, _, err := s.Service.Campaign(ctx, fenceview.CampaignRequest{Election: "primary", Candidate: "node-2", Value: hostile, Lease: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b.do("see the new term live", waitJS(field("candidate")+` === "node-2"`))
	if got := b.eval(field("value")); got != hostile {
		t.Errorf("the new leader's value reads %q", got)
	}
	if got := b.eval(field("term")); got[:len(itoa(l2.Term))] != itoa(l2.Term) {
		t.Errorf("the new term reads %q, want %d", got, l2.Term)
	}
	rows := `[...document.querySelectorAll('[data-testid="term-row"]')].map(r => r.dataset.type + ":" + r.querySelector('[data-col="term"]').textContent).join(" ")`
	want := "grant:" + itoa(l2.Term) + " release:" + itoa(l1.Term) + " proclaim:" + itoa(l1.Term) + " grant:" + itoa(l1.Term)
	if got := b.eval(rows); got != want {
		t.Errorf("terms and values: %q, want %q", got, want)
	}
	if n := b.eval(`String(document.querySelectorAll("main script, main i").length) + (document.body.dataset.pwned || "")`); n != "0" {
		t.Fatalf("markup from a value was parsed: %q", n)
	}
	if b.eval(`window.__sameDocument`) != "yes" {
		t.Fatal("the page reloaded to show the changes")
	}
}
