package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview/internal/servertest"
)

// Issue 11: a second fenceview on the same --db started, and the first
// answered 503s. Now the second refuses to start, with a message saying
// why, while the first keeps serving; once the first is gone, a new one
// starts.
func TestSecondServerOnTheSameDatabaseRefusesToStart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "fenceview.db")
	first := servertest.StartProcess(t, servertest.ProcessOptions{DBPath: db})
	second, err := servertest.LaunchProcess(t, servertest.ProcessOptions{DBPath: db}) // it exits on its own: a hang here is the bug
	if out := second.Log(); err == nil || !strings.Contains(out, "another fenceview is already serving") || !strings.Contains(out, db) {
		t.Fatalf("second server: err %v, output:\n%s", err, out)
	}
	res, err := http.Get(first.URL + "/healthz")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("first server after the second's attempt: %v %v", res, err)
	}
	res.Body.Close()
	first.Signal(syscall.SIGTERM)
	<-first.Done
	servertest.StartProcess(t, servertest.ProcessOptions{DBPath: db}) // the lock went with the process
}

// Issue 11: 100,000 resources could be created and never deleted. A
// request that would create resource N+1 is refused with a clear error,
// whichever route would create it, and the known ones keep working.
func TestMaxResources(t *testing.T) {
	s := startServer(t, func(m *Main) { m.MaxResources = 3; m.AdminToken = "admin" })
	for _, id := range []string{"a", "b", "c"} {
		s.acquire(id, "h", 60000)
	}
	for name, r := range map[string]response{
		"acquire":   s.do("POST", "/v1/locks/d/acquire", map[string]any{"holder": "h"}),
		"fence":     s.do("POST", "/v1/fence/d", nil, "X-Fencing-Token", "1"),
		"decisions": report(s, map[string]any{"resourceId": "d", "token": 1, "accepted": true, "source": "p"}),
		"reset":     s.do("POST", "/v1/locks/d/reset", map[string]any{"floor": 5}, "Authorization", "Bearer admin"),
	} {
		if r.Status != 429 || !strings.Contains(fmt.Sprint(r.Body["error"]), "--max-resources") {
			t.Fatalf("%s of resource 4: %d %s", name, r.Status, r.Raw)
		}
	}
	if r := s.do("GET", "/v1/resources/d", nil); r.Status != 404 {
		t.Fatalf("resource 4 recorded: %s", r.Raw)
	}
	if r := s.do("POST", "/v1/locks/c/release", map[string]any{"holder": "h"}); r.Status != 200 {
		t.Fatalf("a known resource refused: %d %s", r.Status, r.Raw)
	}
	s.acquire("c", "h2", 60000)
	if r := s.fence("a", 1); r.Status != 200 {
		t.Fatalf("fence of a known resource: %d %s", r.Status, r.Raw)
	}
}

// Issue 11: 40,960 waiters took 690 MB. Waiters are capped across the
// server; one over gets 429 at once, and a released lock still goes to the
// first waiter.
func TestWaitersAreCapped(t *testing.T) {
	s := startServer(t, func(m *Main) { m.MaxWaiters = 2 })
	s.acquire("r", "owner", 600000)
	var wg sync.WaitGroup
	answers := make(chan response, 2)
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers <- s.do("POST", "/v1/locks/r/acquire", map[string]any{"holder": fmt.Sprint("w", i), "waitMs": 60000})
		}()
	}
	for s.Service.Metrics().Waiters < 2 {
		time.Sleep(time.Millisecond) // polling a condition, not timing: the waiters are queued when this ends
	}
	r := s.do("POST", "/v1/locks/r/acquire", map[string]any{"holder": "w3", "waitMs": 60000})
	if r.Status != 429 || !strings.Contains(fmt.Sprint(r.Body["error"]), "waiting") {
		t.Fatalf("waiter over the cap: %d %s", r.Status, r.Raw)
	}
	if r := s.do("POST", "/v1/locks/other/acquire", map[string]any{"holder": "x", "waitMs": 0}); r.Status != 200 {
		t.Fatalf("an acquire that does not wait: %d %s", r.Status, r.Raw)
	}
	s.do("POST", "/v1/locks/r/expire", nil)
	s.do("POST", "/v1/locks/r/expire", nil)
	wg.Wait()
	close(answers)
	for a := range answers {
		if a.Status != 200 {
			t.Fatalf("queued waiter: %d %s", a.Status, a.Raw)
		}
	}
}

// Issue 11: 3,000 idle websockets were all accepted. Event streams and
// RPC connections share a cap; one more gets 429 JSON, and closing one
// makes room.
func TestWebsocketsAreCapped(t *testing.T) {
	s := startServer(t, func(m *Main) { m.MaxWebsockets = 2 })
	ws := "ws" + strings.TrimPrefix(s.URL(), "http")
	a, _, err := websocket.DefaultDialer.Dial(ws+"/v1/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := websocket.DefaultDialer.Dial(ws+"/v1/rpc", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, path := range []string{"/v1/events", "/v1/rpc"} {
		_, res, err := websocket.DefaultDialer.Dial(ws+path, nil)
		if err == nil || res == nil || res.StatusCode != 429 || res.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s over the cap: %v %v", path, res, err)
		}
	}
	a.Close()
	// The server notices the close when its reader does; dialling until it
	// has is waiting for a condition, bounded by the hang guard.
	deadline := time.Now().Add(hangGuard)
	for {
		c, _, err := websocket.DefaultDialer.Dial(ws+"/v1/events", nil)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no room after a close: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// One RPC connection may not queue more than its share of waiters.
func TestRPCWaitersPerConnectionAreCapped(t *testing.T) {
	s := startServer(t)
	s.acquire("r", "owner", 600000)
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(s.URL(), "http")+"/v1/rpc", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var msg strings.Builder
	for i := 0; i <= 256; i++ {
		fmt.Fprintf(&msg, `{"id":%d,"op":"acquire","resource":"r","holder":"w%d","waitMs":300000}`+"\n", i+1, i)
	}
	if err := conn.WriteMessage(websocket.TextMessage, []byte(msg.String())); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(hangGuard))
	_, got, err := conn.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), `"status":429`) || !strings.Contains(string(got), "already waiting") {
		t.Fatalf("answer to waiter 257: %s", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	for s.Service.Metrics().Waiters != 256 && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	if n := s.Service.Metrics().Waiters; n != 256 {
		t.Fatalf("waiters = %d, want 256", n)
	}
}

// Issue 11: /v1/resources rendered every resource (83 MB pages). It pages
// like the rejection history: limit 1..1000 (default 100), cursor, next,
// and prefix= to filter.
func TestResourcesArePaged(t *testing.T) {
	s := startServer(t)
	var want []string
	for i := 0; i < 250; i++ {
		id := fmt.Sprintf("job/%03d", i)
		if i%2 == 1 {
			id = fmt.Sprintf("other/%03d", i)
		}
		want = append(want, id)
		if r := report(s, map[string]any{"resourceId": id, "token": 1, "accepted": true, "source": "p"}); r.Status != 200 {
			t.Fatal(r.Status, string(r.Raw))
		}
	}
	list := func(q string) ([]string, string) {
		t.Helper()
		r := s.do("GET", "/v1/resources?"+q, nil)
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", q, r.Status, r.Raw)
		}
		var ids []string
		for _, row := range r.Body["resources"].([]any) {
			ids = append(ids, row.(map[string]any)["resourceId"].(string))
		}
		next, _ := r.Body["next"].(string)
		return ids, next
	}
	if ids, next := list(""); len(ids) != 100 || next == "" || ids[0] != "job/000" {
		t.Fatalf("default page: %d ids, next %q", len(ids), next)
	}
	var all []string
	for q := "prefix=job/&limit=30"; ; {
		ids, next := list(q)
		all = append(all, ids...)
		if next == "" {
			break
		}
		q = "prefix=job/&limit=30&cursor=" + next
	}
	if len(all) != 125 || all[0] != "job/000" || all[124] != "job/248" {
		t.Fatalf("paging by prefix: %d ids, %v...", len(all), all[:3])
	}
	for i := 1; i < len(all); i++ {
		if all[i] <= all[i-1] {
			t.Fatalf("not in id order: %q then %q", all[i-1], all[i])
		}
	}
	if ids, next := list("limit=1000"); len(ids) != 250 || next != "" {
		t.Fatalf("one page of everything: %d, next %q", len(ids), next)
	}
	for _, bad := range []string{"limit=0", "limit=1001", "limit=x", "limit=+5", "cursor=AA", "cursor=!!", "prefix=" + strings.Repeat("p", 161)} {
		if r := s.do("GET", "/v1/resources?"+bad, nil); r.Status != 400 {
			t.Fatalf("%s: %d %s", bad, r.Status, r.Raw)
		}
	}
}
