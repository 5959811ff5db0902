package dashboard

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
)

// A lock held shared shows its mode, each reader with its lease and the
// read phase's token; reads in its history say they are reads, refused
// ones apart from refused writes.
func TestResourcePageOfASharedLock(t *testing.T) {
	e := newEnv(t)
	first := e.acquire("doc", "writer", time.Second)
	e.clock.Advance(time.Second) // its lease runs out
	var token int64
	for _, holder := range []string{"reader-a", "reader-b", "reader-b"} {
		g, err := e.svc.Acquire(context.Background(), fenceview.AcquireRequest{ResourceID: "doc", Holder: holder, Lease: time.Minute, Shared: true})
		if err != nil {
			t.Fatal(err)
		}
		token = g.Fencing.Token
	}
	read := func(tok int64) {
		if _, err := e.svc.Fence(context.Background(), fenceview.Fence{ResourceID: "doc", Token: guard.Token{Token: tok}, Access: fenceview.AccessRead, Source: "reader"}); err != nil {
			t.Fatal(err)
		}
	}
	read(token)
	e.fence("doc", token, "writer") // refused: a read phase's token
	e.clock.Advance(time.Second)
	read(first) // the writer's token, below the phase's read: stale

	p := e.get("/resources/doc")
	lock := p.find("lock-state")
	field := func(f string) string {
		return strings.Join(strings.Fields(lock.Find(`[data-field="`+f+`"]`).Text()), " ")
	}
	if field("mode") != "shared: 2 readers" || !strings.HasPrefix(field("token"), "2") {
		t.Fatalf("lock card: mode %q, token %q", field("mode"), field("token"))
	}
	readers := lock.Find(`[data-testid="reader"]`)
	if readers.Length() != 2 || !strings.HasPrefix(strings.TrimSpace(readers.Eq(0).Text()), "reader-a") ||
		!strings.Contains(readers.Eq(1).Text(), "held 2 times") {
		t.Fatalf("readers: %q", readers.Text())
	}
	var labels, details []string
	p.find("history-row").Each(func(_ int, row *goquery.Selection) {
		labels = append(labels, strings.TrimSpace(row.Find(".badge").Text()))
		details = append(details, strings.TrimSpace(row.Find(".detail").Text()))
	})
	want := []string{"stale read", "refused", "read"}
	if len(labels) < 3 || strings.Join(labels[:3], ",") != strings.Join(want, ",") {
		t.Fatalf("history labels %v, want %v first", labels, want)
	}
	if !strings.Contains(details[0], "refused for a read (stale-token)") || !strings.Contains(details[1], "refused (shared-token)") ||
		!strings.Contains(details[2], "accepted for a read") {
		t.Fatalf("history details %q", details[:3])
	}
}
