package dashboard

import (
	"fmt"
	"testing"
	"time"
)

// Issue 11: the dashboard rendered every resource (83 MB pages at 100,000).
// The overview shows one page of 100, by id, with the totals of all of
// them and a link to the next page; a search (q=) narrows it.
func TestOverviewShowsOnePageOfResources(t *testing.T) {
	e := newEnv(t)
	const resourcesShown = 100
	e.h.TableSize = resourcesShown
	for i := 0; i < 150; i++ {
		e.acquire(fmt.Sprintf("r/%03d", i), "h", time.Minute)
	}
	e.acquire("s/0", "h", time.Minute)
	p := e.get("/")
	rows := p.find("resource-row")
	if rows.Length() != resourcesShown || rows.First().AttrOr("data-resource", "") != "r/000" {
		t.Fatalf("first page: %d rows", rows.Length())
	}
	if got := p.find("stat-resources").Text(); got != "151" {
		t.Fatalf("resources stat = %q, want every resource", got)
	}
	if p.find("resources").AttrOr("data-live-add", "") != "false" {
		t.Fatal("a partial table is not marked paged (app.js would add rows to it)")
	}
	next, ok := p.find("page-next").Attr("href")
	if !ok {
		t.Fatal("no link to the next page")
	}
	p = e.get(next)
	rows = p.find("resource-row")
	if rows.Length() != 51 || rows.First().AttrOr("data-resource", "") != "r/100" || rows.Last().AttrOr("data-resource", "") != "s/0" {
		t.Fatalf("second page: %d rows, %q..%q", rows.Length(), rows.First().AttrOr("data-resource", ""), rows.Last().AttrOr("data-resource", ""))
	}
	if p.find("page-next").Length() != 0 {
		t.Fatal("a next link after the last page")
	}
	p = e.get("/?q=s/")
	if rows := p.find("resource-row"); rows.Length() != 1 || rows.AttrOr("data-resource", "") != "s/0" {
		t.Fatalf("prefix page: %d rows", rows.Length())
	}
	if p := e.get("/?after=AA"); p.status != 400 {
		t.Fatalf("bad cursor: status %d", p.status)
	}
}
