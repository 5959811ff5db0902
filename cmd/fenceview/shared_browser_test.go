package main

import (
	"context"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
)

// A shared lock's page in Chromium: its mode and readers, kept live as
// readers come and a writer follows them, and reads in the history marked
// as reads, refused ones apart from refused writes, with the words the
// server uses.
func TestSharedLockPageInBrowser(t *testing.T) {
	b := browserSteps{t, browser(t)}
	s := startServer(t)
	ctx := context.Background()
	read := func(holder string) int64 {
		g, err := s.Service.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "report", Holder: holder, Lease: time.Minute, Shared: true})
		if err != nil {
			t.Fatal(err)
		}
		return g.Fencing.Token
	}
	token := read("reader-a")
	mode := `document.querySelector('[data-testid="lock-state"] [data-field="mode"]').textContent`
	b.openLive("open the shared lock", s.URL()+"/resources/report", `[data-testid="reader"]`)
	if got := b.eval(mode); got != "shared: 1 reader" {
		t.Fatalf("mode %q", got)
	}

	read("reader-b")
	b.do("see the second reader join, live",
		waitJS(`document.querySelectorAll('[data-testid="reader"]').length === 2`),
		waitJS(mode+` === "shared: 2 readers"`))

	fence := func(access string) {
		if _, err := s.Service.Fence(ctx, fenceview.Fence{ResourceID: "report", Token: guard.Token{Token: token}, Access: access, Source: "browser-test"}); err != nil {
			t.Fatal(err)
		}
	}
	fence(fenceview.AccessRead)
	fence(fenceview.AccessWrite) // refused: a read phase's token
	row := func(n int) string {
		return `document.querySelectorAll('[data-testid="history-row"]')[` + itoa(int64(n)) + `]`
	}
	b.do("see the read and the refused write, live",
		waitJS(row(0)+`?.querySelector(".badge")?.textContent.trim() === "refused"`),
		waitJS(row(1)+`?.querySelector(".badge")?.textContent.trim() === "read"`),
		waitJS(`/accepted for a read/.test(`+row(1)+`.querySelector(".detail").textContent)`),
		waitJS(`/refused \(shared-token\)/.test(`+row(0)+`.querySelector(".detail").textContent)`))

	for _, h := range []string{"reader-a", "reader-b"} {
		if _, err := s.Service.Release(ctx, "report", h); err != nil {
			t.Fatal(err)
		}
	}
	w, err := s.Service.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "report", Holder: "writer", Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	b.do("see the writer after the readers, live",
		waitJS(mode+` === "exclusive"`),
		waitJS(`document.querySelector('[data-testid="lock-state"] [data-field="holder"]')?.textContent === "writer"`))
	if b.eval(`window.__sameDocument`) != "yes" {
		t.Fatal("the page reloaded to show the change")
	}
	// The server's words for the same rows, once reloaded.
	if d, err := s.Service.Fence(ctx, fenceview.Fence{ResourceID: "report", Token: w.Fencing, Source: "browser-test"}); err != nil || !d.Accepted {
		t.Fatalf("the writer's write: %+v %v", d, err)
	}
	fence(fenceview.AccessRead) // the ended phase's read, after the writer wrote: stale
	b.do("see the stale read, live", waitJS(row(0)+`?.querySelector(".badge")?.textContent.trim() === "stale read"`))
	live := b.eval(row(0) + `.querySelector(".detail").textContent + "|" + ` + row(1) + `.querySelector(".detail").textContent`)
	b.openLive("reload", s.URL()+"/resources/report", `[data-testid="lock-state"]`)
	if drawn := b.eval(row(0) + `.querySelector(".detail").textContent + "|" + ` + row(1) + `.querySelector(".detail").textContent`); drawn != live {
		t.Fatalf("the server draws %q, the live page drew %q", drawn, live)
	}
}
