package main

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fenceview/fenceview"
)

// A lock-delay's countdown in Chromium, beside the lease: drawn by the
// server for a lock in its delay, shown live when a lease with a delay
// runs out under the viewer's eyes (with the hold it ended), and gone when
// an admin frees the lock.
func TestLockDelayCountdownInBrowser(t *testing.T) {
	b := browserSteps{t, browser(t)}
	s := startServer(t)
	ctx := context.Background()
	acq := fenceview.AcquireRequest{ResourceID: "db", Holder: "writer-1", Lease: 2 * time.Second, LockDelay: 20 * time.Second}
	if _, err := s.Service.Acquire(ctx, acq); err != nil {
		t.Fatal(err)
	}
	delay := `document.querySelector('[data-testid="lock-state"] [data-field="delay"]')`
	b.openLive("open the held lock", s.URL()+"/resources/db", `[data-field="lease"] .countdown`)
	if got := b.eval(`String(` + delay + `.hidden)`); got != "true" {
		t.Fatal("a lock-delay shows while the lease runs")
	}

	// The lease runs out without a release: the delay starts.
	s.clock.Advance(3 * time.Second)
	s.Service.Sweep(ctx)
	b.do("see the delay start, live",
		waitJS(`document.querySelector('[data-field="state"]').textContent === "free"`),
		waitJS(`!`+delay+`.hidden && /^\d+s left$/.test(`+delay+`.querySelector(".countdown.delay")?.textContent)`),
		// The hold just ended shows in the waits and holds, live too:
		// from the grant to the lease's end, 2 s.
		waitJS(`document.querySelector('[data-testid="times-hold"] [data-col="max"]')?.textContent === "2s"`),
	)
	if b.eval(`window.__sameDocument`) != "yes" {
		t.Fatal("the page reloaded to show the delay")
	}
	if _, err := s.Service.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "db", Holder: "writer-2", Lease: time.Second}); fenceview.ErrorMessage(err) != "lock delay" {
		t.Fatalf("acquire in the delay: %v", err)
	}

	// Drawn by the server: the delay ends 20 s after the lease did, 19 s
	// from now on the server's clock.
	b.do("reload", chromedp.Navigate(s.URL()+"/resources/db"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="lock-state"]`)),
		waitJS(`document.body.dataset.live === "open"`))
	if got := b.eval(delay + `.querySelector(".countdown").dataset.remainingMs + " " + ` + delay + `.querySelector(".countdown").parentElement.previousElementSibling.textContent`); got != "19000 Lock-delay" {
		t.Errorf("the server's lock-delay: %q", got)
	}
	if got := b.eval(`String(/^\d+s left$/.test(` + delay + `.querySelector(".countdown").textContent))`); got != "true" {
		t.Errorf("the lock-delay reads %q", b.eval(delay+`.textContent`))
	}

	b.shot("dashboard-lockdelay.png")

	// An admin's force-expire ends the delay at once.
	if err := s.Service.ForceExpire(ctx, "db"); err != nil {
		t.Fatal(err)
	}
	b.do("see the delay end, live", waitJS(delay+`.hidden`))
	if _, err := s.Service.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "db", Holder: "writer-2", Lease: time.Minute}); err != nil {
		t.Fatalf("acquire after the force-expire: %v", err)
	}
	b.do("see the new holder", waitJS(`document.querySelector('[data-field="holder"]').textContent === "writer-2"`))
}
