package dashboard

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A lock's page shows how long its recent grants waited and were held.
func TestLockTimesCard(t *testing.T) {
	e := newEnv(t)
	if p := e.get("/resources/r"); p.status != http.StatusNotFound {
		t.Fatalf("unknown resource: %d", p.status)
	}
	e.acquire("r", "a", time.Minute)
	if none := e.get("/resources/r").find("lock-times"); none.Find(`[data-testid="times-wait"] [data-col="count"]`).Text() != "1" ||
		none.Find(`[data-testid="times-hold"] [data-col="count"]`).Text() != "0" {
		t.Errorf("after one grant: %q", none.Text())
	}
	e.clock.Advance(3 * time.Second)
	if _, err := e.svc.Release(context.Background(), "r", "a"); err != nil {
		t.Fatal(err)
	}
	e.acquire("r", "b", time.Minute)
	e.clock.Advance(1500 * time.Millisecond)
	if _, err := e.svc.Release(context.Background(), "r", "b"); err != nil {
		t.Fatal(err)
	}
	card := e.get("/resources/r").find("lock-times")
	for _, c := range []struct{ sel, want string }{
		{`[data-testid="times-wait"] [data-col="p50"]`, "0s"},
		{`[data-testid="times-wait"] [data-col="max"]`, "0s"},
		{`[data-testid="times-wait"] [data-col="count"]`, "2"},
		{`[data-testid="times-hold"] [data-col="p50"]`, "1.5s"},
		{`[data-testid="times-hold"] [data-col="p99"]`, "3s"},
		{`[data-testid="times-hold"] [data-col="max"]`, "3s"},
		{`[data-testid="times-hold"] [data-col="count"]`, "2"},
		{`[data-testid="times-waiters"]`, "0 acquires wait now."},
	} {
		if got := strings.TrimSpace(card.Find(c.sel).Text()); got != c.want {
			t.Errorf("%s = %q, want %q", c.sel, got, c.want)
		}
	}
}
