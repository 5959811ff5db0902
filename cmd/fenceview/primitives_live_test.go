package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview/internal/servertest"
)

// Semaphores, multi-locks, elections and lock-delay working end to end
// over the JSON API and the RPC stream, on the fake clock.

// async sends a request in the background; its answer arrives on the
// channel.
func (s *testServer) async(method, path string, body any) <-chan response {
	ch := make(chan response, 1)
	go func() { ch <- s.do(method, path, body) }()
	return ch
}

func receive(t *testing.T, ch <-chan response) response {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(hangGuard):
		t.Fatal("no answer")
		return response{}
	}
}

func field(r response, path ...string) any {
	var v any = r.Body
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	return v
}

func TestSemaphoreOverHTTP(t *testing.T) {
	s := startServer(t)
	slot0 := s.stream("?resource=" + url.QueryEscape("jobs#0"))
	acquire := func(holder string, permits int) response {
		return s.do("POST", "/v1/semaphores/jobs/acquire", map[string]any{"holder": holder, "permits": permits, "leaseMs": 60000})
	}
	w1 := acquire("w1", 2)
	if w1.Status != 200 || w1.Body["resourceId"] != "jobs#0" || w1.Body["semaphore"] != "jobs" || w1.num("slot") != 0 ||
		field(w1, "fencing", "scope") != "resource:jobs#0" || tokenOf(w1) != 1 || w1.Body["holder"] != "w1" {
		t.Fatalf("first permit: %d %s", w1.Status, w1.Raw)
	}
	w2 := acquire("w2", 2)
	if w2.Status != 200 || w2.Body["resourceId"] != "jobs#1" || w2.num("slot") != 1 {
		t.Fatalf("second permit: %d %s", w2.Status, w2.Raw)
	}
	if r := acquire("w3", 2); r.Status != 409 || r.Body["error"] != "no permit free" || r.num("permits") != 2 {
		t.Fatalf("third of two: %d %s", r.Status, r.Raw)
	}
	if r := acquire("w3", 3); r.Status != 409 || r.Body["error"] != "permits mismatch" || r.num("permits") != 2 {
		t.Fatalf("another count: %d %s", r.Status, r.Raw)
	}
	st := s.do("GET", "/v1/semaphores/jobs", nil)
	held, _ := st.Body["held"].([]any)
	if st.Status != 200 || st.Body["name"] != "jobs" || st.num("permits") != 2 || st.num("free") != 0 || len(held) != 2 ||
		held[0].(map[string]any)["holder"] != "w1" || held[0].(map[string]any)["resourceId"] != "jobs#0" {
		t.Fatalf("state: %d %s", st.Status, st.Raw)
	}
	// A slot is a lock: the server's guard fences by its id and token,
	// and its lock's renew works.
	if r := s.fence("jobs#0", tokenOf(w1)); r.Status != 200 {
		t.Fatalf("fence by the slot's token: %d %s", r.Status, r.Raw)
	}
	if r := s.do("POST", "/v1/locks/jobs%231/renew", `{"holder":"w2"}`); r.Status != 200 || tokenOf(r) != tokenOf(w2) {
		t.Fatalf("renew of slot 1 through its lock: %d %s", r.Status, r.Raw)
	}
	rel := s.do("POST", "/v1/semaphores/jobs/release", `{"holder":"w1","slot":0}`)
	if rel.Status != 200 || rel.Body["resourceId"] != "jobs#0" || rel.num("holdCount") != 0 || rel.Body["released"] != true ||
		rel.Body["semaphore"] != "jobs" || rel.num("slot") != 0 {
		t.Fatalf("release: %d %s", rel.Status, rel.Raw)
	}
	if r := s.do("POST", "/v1/semaphores/jobs/release", `{"holder":"w1","slot":0}`); r.Status != 409 {
		t.Fatalf("release again: %d %s", r.Status, r.Raw)
	}
	// The slot's tokens go on rising from one holder to the next.
	w3 := acquire("w3", 2)
	if w3.Status != 200 || w3.Body["resourceId"] != "jobs#0" || tokenOf(w3) <= tokenOf(w1) {
		t.Fatalf("slot 0 again: %d %s", w3.Status, w3.Raw)
	}
	// A waiter takes whichever slot frees first.
	waiting := s.async("POST", "/v1/semaphores/jobs/acquire", map[string]any{"holder": "w4", "permits": 2, "waitMs": 300000})
	servertest.Eventually(t, "w4 waits", func() bool { return s.do("GET", "/v1/semaphores/jobs", nil).num("waiters") == 1 })
	s.do("POST", "/v1/semaphores/jobs/release", `{"holder":"w2","slot":1}`)
	if w4 := receive(t, waiting); w4.Status != 200 || w4.Body["resourceId"] != "jobs#1" || tokenOf(w4) <= tokenOf(w2) {
		t.Fatalf("the waiter: %d %s", w4.Status, w4.Raw)
	}
	// An admin lowers the permits: slot 1 stays held, and is not granted
	// again once released.
	if r := s.do("PUT", "/v1/semaphores/jobs", `{"permits":1}`); r.Status != 200 || r.num("permits") != 1 {
		t.Fatalf("set permits: %d %s", r.Status, r.Raw)
	}
	var types []string
	e := slot0.next()
	for ; e.Type != "permits"; e = slot0.next() {
		if types = append(types, e.Type); len(types) > 10 {
			t.Fatalf("no permits event on slot 0: %v", types)
		}
	}
	if strings.Join(types, " ") != "grant accept release grant" || e.Permits != 1 {
		t.Fatalf("slot 0's events: %v, then %+v", types, e)
	}
	if r := acquire("w5", 2); r.Status != 409 || r.Body["error"] != "permits mismatch" || r.num("permits") != 1 {
		t.Fatalf("old count after the change: %d %s", r.Status, r.Raw)
	}
	s.do("POST", "/v1/semaphores/jobs/release", `{"holder":"w4","slot":1}`)
	if r := acquire("w5", 1); r.Status != 409 || r.Body["error"] != "no permit free" {
		t.Fatalf("slot 1 granted above the new count: %d %s", r.Status, r.Raw)
	}
	if r := s.do("GET", "/v1/semaphores/never", nil); r.Status != 404 {
		t.Fatalf("a semaphore never acquired: %d %s", r.Status, r.Raw)
	}
}

func TestMultiLockOverHTTP(t *testing.T) {
	s := startServer(t)
	other := s.acquire("b", "other", 60000)
	before := s.Service.LastSeq()
	r := s.do("POST", "/v1/locks/acquire-all", `{"resources":["a","b","c"],"holder":"h"}`)
	held, _ := r.Body["held"].([]any)
	if r.Status != 409 || r.Body["error"] != "lock held" || len(held) != 1 ||
		held[0].(map[string]any)["resourceId"] != "b" || held[0].(map[string]any)["holder"] != "other" ||
		held[0].(map[string]any)["expiresAt"] != other.Body["expiresAt"] {
		t.Fatalf("one held: %d %s", r.Status, r.Raw)
	}
	if s.Service.LastSeq() != before {
		t.Fatal("a refused multi-lock recorded events")
	}
	for _, id := range []string{"a", "c"} {
		if l := s.do("GET", "/v1/locks/"+id, nil); l.Body["locked"] != false {
			t.Fatalf("%s taken by a refused multi-lock: %s", id, l.Raw)
		}
	}
	s.do("POST", "/v1/locks/b/release", `{"holder":"other"}`)
	r = s.do("POST", "/v1/locks/acquire-all", `{"resources":["c","a","b"],"holder":"h","leaseMs":60000}`)
	grants, _ := r.Body["grants"].([]any)
	if r.Status != 200 || len(grants) != 3 {
		t.Fatalf("all free: %d %s", r.Status, r.Raw)
	}
	for i, id := range []string{"c", "a", "b"} {
		g := grants[i].(map[string]any)
		if g["resourceId"] != id || g["holder"] != "h" {
			t.Fatalf("grant %d: %v", i, g)
		}
	}
	if tok := grants[2].(map[string]any)["fencing"].(map[string]any)["token"].(float64); int64(tok) <= tokenOf(other) {
		t.Fatalf("b's token %v not above %d", tok, tokenOf(other))
	}
	rel := s.do("POST", "/v1/locks/release-all", `{"resources":["a","b","x"],"holder":"h"}`)
	if rel.Status != 200 || fmt.Sprint(rel.Body["released"]) != "[a b]" || fmt.Sprint(rel.Body["notHeld"]) != "[x]" {
		t.Fatalf("release-all: %d %s", rel.Status, rel.Raw)
	}
	if l := s.do("GET", "/v1/locks/c", nil); l.Body["holder"] != "h" {
		t.Fatalf("c, not listed, was released: %s", l.Raw)
	}
	// Waiting holds nothing: p stays free while q is held by another.
	s.acquire("q", "other", 60000)
	waiting := s.async("POST", "/v1/locks/acquire-all", `{"resources":["p","q"],"holder":"h","waitMs":300000}`)
	servertest.Eventually(t, "the multi-lock waits", func() bool { return s.Service.Metrics().Waiters >= 1 })
	if l := s.do("GET", "/v1/locks/p", nil); l.Body["locked"] != false {
		t.Fatalf("p held by a waiting multi-lock: %s", l.Raw)
	}
	if g := s.acquire("p", "third", 60000); g.Status != 200 {
		t.Fatal("p not free")
	}
	s.do("POST", "/v1/locks/p/release", `{"holder":"third"}`)
	s.do("POST", "/v1/locks/q/release", `{"holder":"other"}`)
	if w := receive(t, waiting); w.Status != 200 || len(w.Body["grants"].([]any)) != 2 {
		t.Fatalf("the waiting multi-lock: %d %s", w.Status, w.Raw)
	}
}

func TestElectionOverHTTP(t *testing.T) {
	s := startServer(t)
	events := s.stream("?resource=leader")
	c1 := s.do("POST", "/v1/elections/leader/campaign", `{"candidate":"c1","value":"10.0.0.1:80","leaseMs":10000}`)
	term := int64(field(c1, "leader", "term").(float64))
	if c1.Status != 200 || c1.Body["name"] != "leader" || field(c1, "leader", "candidate") != "c1" ||
		field(c1, "leader", "value") != "10.0.0.1:80" || term != tokenOf(c1) || field(c1, "fencing", "scope") != "resource:leader" ||
		field(c1, "leader", "since") != "2026-09-24T06:14:22.000Z" || field(c1, "leader", "expiresAt") != "2026-09-24T06:14:32.000Z" {
		t.Fatalf("campaign: %d %s", c1.Status, c1.Raw)
	}
	if g := s.do("GET", "/v1/elections/leader", nil); g.Status != 200 || field(g, "leader", "candidate") != "c1" {
		t.Fatalf("leader: %d %s", g.Status, g.Raw)
	}
	if r := s.do("POST", "/v1/elections/leader/campaign", `{"candidate":"c2"}`); r.Status != 409 || r.Body["error"] != "lock held" ||
		field(r, "leader", "candidate") != "c1" || int64(field(r, "leader", "term").(float64)) != term {
		t.Fatalf("a second candidate: %d %s", r.Status, r.Raw)
	}
	if r := s.do("POST", "/v1/elections/leader/proclaim", `{"candidate":"c2","value":"x"}`); r.Status != 409 || r.Body["error"] != "not leader" {
		t.Fatalf("proclaim by another: %d %s", r.Status, r.Raw)
	}
	p := s.do("POST", "/v1/elections/leader/proclaim", `{"candidate":"c1","value":"10.0.0.1:81"}`)
	if p.Status != 200 || field(p, "leader", "value") != "10.0.0.1:81" || int64(field(p, "leader", "term").(float64)) != term {
		t.Fatalf("proclaim: %d %s", p.Status, p.Raw)
	}
	s.clock.Advance(5 * time.Second)
	rn := s.do("POST", "/v1/elections/leader/renew", `{"candidate":"c1"}`)
	if rn.Status != 200 || int64(field(rn, "leader", "term").(float64)) != term || field(rn, "leader", "expiresAt") != "2026-09-24T06:14:37.000Z" {
		t.Fatalf("renew: %d %s", rn.Status, rn.Raw)
	}
	if r := s.fence("leader", term); r.Status != 200 {
		t.Fatalf("the leader's write: %d %s", r.Status, r.Raw)
	}
	if r := s.do("POST", "/v1/elections/leader/resign", `{"candidate":"c1"}`); r.Status != 200 || r.Body["resigned"] != true {
		t.Fatalf("resign: %d %s", r.Status, r.Raw)
	}
	if g := s.do("GET", "/v1/elections/leader", nil); g.Status != 200 || g.Body["leader"] != nil {
		t.Fatalf("nobody leads: %d %s", g.Status, g.Raw)
	}
	c2 := s.do("POST", "/v1/elections/leader/campaign", `{"candidate":"c2"}`)
	term2 := int64(field(c2, "leader", "term").(float64))
	if c2.Status != 200 || term2 <= term || field(c2, "leader", "value") != "" {
		t.Fatalf("the next leader: %d %s", c2.Status, c2.Raw)
	}
	s.fence("leader", term2)
	if r := s.fence("leader", term); r.Status != 409 || r.Body["reason"] != "stale-token" {
		t.Fatalf("the deposed leader's write: %d %s", r.Status, r.Raw)
	}
	// The stream tells every change, in order.
	var got []string
	for len(got) < 8 {
		e := events.next()
		desc := e.Type
		if e.Value != nil {
			desc += "(" + *e.Value + ")"
		}
		if e.Type == "proclaim" && e.Token != term {
			t.Fatalf("proclaim event's token %d, want the term %d", e.Token, term)
		}
		got = append(got, desc)
	}
	want := "grant(10.0.0.1:80) proclaim(10.0.0.1:81) renew accept release grant accept reject"
	if strings.Join(got, " ") != want {
		t.Fatalf("events %v\nwant   %s", got, want)
	}
}

func TestLockDelay(t *testing.T) {
	s := startServer(t)
	events := s.stream("?resource=r")
	s.do("POST", "/v1/locks/r/acquire", `{"holder":"a","leaseMs":1000,"lockDelayMs":5000}`)
	s.clock.Advance(1001 * time.Millisecond) // a vanishes: its lease runs out without a release
	events.next()                            // the grant
	if e := events.next(); e.Type != "expire" || e.LockDelayMs != 5000 {
		t.Fatalf("expire event: %+v", e)
	}
	for _, holder := range []string{"b", "a"} {
		r := s.do("POST", "/v1/locks/r/acquire", map[string]any{"holder": holder})
		if r.Status != 409 || r.Body["error"] != "lock delay" || r.Body["availableAt"] != "2026-09-24T06:14:28.000Z" {
			t.Fatalf("acquire by %s in the delay: %d %s", holder, r.Status, r.Raw)
		}
	}
	if l := s.do("GET", "/v1/locks/r", nil); l.Body["locked"] != false || l.Body["availableAt"] != "2026-09-24T06:14:28.000Z" {
		t.Fatalf("lock in its delay: %s", l.Raw)
	}
	// A multi-lock is refused with the lock free, in its delay (s.do
	// checks the refusal against internal/api/openapi.yaml too).
	all := s.do("POST", "/v1/locks/acquire-all", `{"resources":["r"],"holder":"c"}`)
	if held, _ := all.Body["held"].([]any); all.Status != 409 || len(held) != 1 ||
		held[0].(map[string]any)["holder"] != nil || held[0].(map[string]any)["availableAt"] != "2026-09-24T06:14:28.000Z" {
		t.Fatalf("acquire-all in the delay: %d %s", all.Status, all.Raw)
	}
	// A waiter waits through the delay and is served when it ends.
	waiting := s.async("POST", "/v1/locks/r/acquire", `{"holder":"b","waitMs":300000}`)
	servertest.Eventually(t, "b waits", func() bool { return s.do("GET", "/v1/locks/r", nil).num("waiters") == 1 })
	s.clock.Advance(5 * time.Second)
	if b := receive(t, waiting); b.Status != 200 || b.Body["holder"] != "b" {
		t.Fatalf("the waiter after the delay: %d %s", b.Status, b.Raw)
	}
	if l := s.do("GET", "/v1/locks/r", nil); l.Body["availableAt"] != nil {
		t.Fatalf("availableAt after the delay: %s", l.Raw)
	}
	// A release frees the lock at once, delay or not.
	s.do("POST", "/v1/locks/q/acquire", `{"holder":"a","lockDelayMs":60000}`)
	s.do("POST", "/v1/locks/q/release", `{"holder":"a"}`)
	if r := s.do("POST", "/v1/locks/q/acquire", `{"holder":"b"}`); r.Status != 200 {
		t.Fatalf("acquire after a release: %d %s", r.Status, r.Raw)
	}
}

// The RPC stream answers the new ops exactly as the JSON API answers
// their routes.
func TestRPCPrimitivesAnswerLikeTheJSONAPI(t *testing.T) {
	tw := startTwins(t)
	script := []struct {
		op, name, body string
	}{
		{"semaphore-acquire", "jobs", `{"holder":"w1","permits":2,"leaseMs":5000}`},
		{"semaphore-acquire", "jobs", `{"holder":"w2","permits":2,"lockDelayMs":1000}`},
		{"semaphore-acquire", "jobs", `{"holder":"w3","permits":2}`},
		{"semaphore-acquire", "jobs", `{"holder":"w3","permits":5}`},
		{"semaphore-acquire", "jobs", `{"holder":"w3","permits":0}`},
		{"semaphore", "jobs", ``},
		{"semaphore-release", "jobs", `{"holder":"w1","slot":0}`},
		{"semaphore-release", "jobs", `{"holder":"w1","slot":0}`},
		{"semaphore-permits", "jobs", `{"permits":3}`},
		{"semaphore", "nope", ``},
		{"acquire-all", "", `{"resources":["a","b"],"holder":"h","leaseMs":5000}`},
		{"acquire-all", "", `{"resources":["b","c"],"holder":"i"}`},
		{"acquire-all", "", `{"resources":["c","c"],"holder":"i"}`},
		{"release-all", "", `{"resources":["a","c"],"holder":"h"}`},
		{"campaign", "e", `{"candidate":"c1","value":"v1","leaseMs":5000}`},
		{"campaign", "e", `{"candidate":"c2"}`},
		{"proclaim", "e", `{"candidate":"c2","value":"v"}`},
		{"proclaim", "e", `{"candidate":"c1","value":"v2"}`},
		{"election-renew", "e", `{"candidate":"c1","leaseMs":7000}`},
		{"election", "e", ``},
		{"resign", "e", `{"candidate":"c1"}`},
		{"election", "e", ``},
		{"campaign", "e", `{"candidate":""}`},
	}
	routes := map[string]struct{ method, path string }{
		"semaphore-acquire": {"POST", "/v1/semaphores/%s/acquire"}, "semaphore-release": {"POST", "/v1/semaphores/%s/release"},
		"semaphore-permits": {"PUT", "/v1/semaphores/%s"}, "semaphore": {"GET", "/v1/semaphores/%s"},
		"acquire-all": {"POST", "/v1/locks/acquire-all"}, "release-all": {"POST", "/v1/locks/release-all"},
		"campaign": {"POST", "/v1/elections/%s/campaign"}, "proclaim": {"POST", "/v1/elections/%s/proclaim"},
		"resign": {"POST", "/v1/elections/%s/resign"}, "election-renew": {"POST", "/v1/elections/%s/renew"},
		"election": {"GET", "/v1/elections/%s"},
	}
	for i, step := range script {
		route := routes[step.op]
		path := route.path
		if strings.Contains(path, "%s") {
			path = fmt.Sprintf(path, url.PathEscape(step.name))
		}
		var body any
		if step.body != "" {
			body = step.body
		}
		line := fmt.Sprintf(`{"id":%d,"op":%q`, i+1, step.op)
		if step.name != "" { // the multi-locks have no name, and take none
			line += fmt.Sprintf(`,"name":%q`, step.name)
		}
		if rest := strings.TrimPrefix(step.body, "{"); rest != "" {
			line += "," + rest
		} else {
			line += "}"
		}
		tw.alike(i, step.op+" "+step.body, route.method, path, body, line)
	}
}

// Waiting semaphore acquires, multi-locks and campaigns count against a
// connection's bound of waiting requests, as waiting acquires do.
func TestRPCPrimitiveWaitersCountAgainstTheBound(t *testing.T) {
	s := startServer(t)
	s.do("POST", "/v1/semaphores/jobs/acquire", `{"holder":"owner","permits":1,"leaseMs":600000}`)
	s.acquire("m", "owner", 600000)
	s.do("POST", "/v1/elections/e/campaign", `{"candidate":"owner","leaseMs":600000}`)
	conn := s.rpc()
	var msg strings.Builder
	for i := range 256 {
		switch i % 3 {
		case 0:
			fmt.Fprintf(&msg, `{"id":%d,"op":"semaphore-acquire","name":"jobs","holder":"w%d","permits":1,"waitMs":300000}`+"\n", i+1, i)
		case 1:
			fmt.Fprintf(&msg, `{"id":%d,"op":"acquire-all","resources":["m","n%d"],"holder":"w%d","waitMs":300000}`+"\n", i+1, i, i)
		default:
			fmt.Fprintf(&msg, `{"id":%d,"op":"campaign","name":"e","candidate":"w%d","waitMs":300000}`+"\n", i+1, i)
		}
	}
	fmt.Fprintf(&msg, `{"id":257,"op":"campaign","name":"e","candidate":"late","waitMs":300000}`)
	if err := conn.conn.WriteMessage(websocket.TextMessage, []byte(msg.String())); err != nil {
		t.Fatal(err)
	}
	conn.conn.SetReadDeadline(time.Now().Add(hangGuard))
	_, got, err := conn.conn.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	var a rpcAnswer
	if err := json.Unmarshal(got, &a); err != nil || a.ID != 257 || a.Status != 429 || !strings.Contains(string(a.Body), "already waiting") {
		t.Fatalf("answer to waiter 257: %s", got)
	}
	servertest.Eventually(t, "256 waiting", func() bool { return s.Service.Metrics().Waiters == 256 })
	// And the connection still serves what does not wait.
	if r := conn.send(`{"id":300,"op":"semaphore","name":"jobs"}`)[300]; r.Status != 200 {
		t.Fatalf("a read beside 256 waiters: %d %s", r.Status, r.Body)
	}
}

// Every kind's grants are counted: the issuer's per lock granted, the
// wait histogram per answer; waiters per kind while they wait.
func TestGrantMetricsCountEveryKind(t *testing.T) {
	s := startServer(t)
	s.do("POST", "/v1/semaphores/jobs/acquire", `{"holder":"a","permits":2}`)
	s.do("POST", "/v1/semaphores/jobs/acquire", `{"holder":"b","permits":2}`)
	s.do("POST", "/v1/semaphores/jobs/acquire", `{"holder":"c","permits":2}`) // 409
	s.do("POST", "/v1/locks/acquire-all", `{"resources":["x","y","z"],"holder":"h"}`)
	s.rpc().send(`{"id":1,"op":"campaign","name":"e","candidate":"c"}`)
	if got, want := byKind(t, s, "fenceview_grant_wait_seconds"), map[string]float64{"lock": 0, "semaphore": 2, "multi": 1, "election": 1}; !maps.Equal(got, want) {
		t.Fatalf("grant waits by kind %v, want %v", got, want)
	}
	if got, want := byKind(t, s, "fenceview_grants_by_kind_total"), map[string]float64{"lock": 0, "semaphore": 2, "multi": 3, "election": 1}; !maps.Equal(got, want) {
		t.Fatalf("grants by kind %v, want %v", got, want)
	}
	waiting := s.async("POST", "/v1/semaphores/jobs/acquire", `{"holder":"d","permits":2,"waitMs":300000}`)
	servertest.Eventually(t, "d waits", func() bool { return byKind(t, s, "fenceview_waiters_by_kind")["semaphore"] == 1 })
	if got, want := byKind(t, s, "fenceview_waiters_by_kind"), map[string]float64{"lock": 0, "semaphore": 1, "multi": 0, "election": 0}; !maps.Equal(got, want) {
		t.Fatalf("waiters by kind %v, want %v", got, want)
	}
	s.do("POST", "/v1/semaphores/jobs/release", `{"holder":"a","slot":0}`)
	if r := receive(t, waiting); r.Status != 200 {
		t.Fatalf("the waiter: %d %s", r.Status, r.Raw)
	}
}

// Within its prefixes a key uses every primitive; a lock of any of them
// belongs to (key, holder), so another key with the same holder name is
// not its owner.
func TestPrimitivesWithinPrefixesAndOwnership(t *testing.T) {
	s := startServer(t, func(m *Main) { m.AdminToken = "admin" })
	teamA := s.key("client", "team-a/")
	other := s.key("client", "team-a/")
	slotZero := s.key("client", "jobs#0")
	as := bearer

	if r := s.do("POST", "/v1/locks/acquire-all", `{"resources":["team-a/x","team-a/y"],"holder":"h"}`, as(teamA)...); r.Status != 200 {
		t.Fatalf("acquire-all within the prefix: %d %s", r.Status, r.Raw)
	}
	if r := s.do("POST", "/v1/semaphores/team-a%2Fjobs/acquire", `{"holder":"h","permits":3}`, as(teamA)...); r.Status != 200 {
		t.Fatalf("semaphore within the prefix: %d %s", r.Status, r.Raw)
	}
	// A one-slot semaphore is within a prefix naming its slot 0.
	if r := s.do("POST", "/v1/semaphores/jobs/acquire", `{"holder":"h","permits":1}`, as(slotZero)...); r.Status != 200 || r.Body["resourceId"] != "jobs#0" {
		t.Fatalf("one slot within the prefix: %d %s", r.Status, r.Raw)
	}
	if r := s.do("POST", "/v1/elections/team-a%2Fleader/campaign", `{"candidate":"h"}`, as(teamA)...); r.Status != 200 {
		t.Fatalf("campaign within the prefix: %d %s", r.Status, r.Raw)
	}

	before := s.Service.LastSeq()
	for _, c := range []struct{ path, body string }{
		{"/v1/semaphores/team-a%2Fjobs/release", `{"holder":"h","slot":0}`},
		{"/v1/elections/team-a%2Fleader/proclaim", `{"candidate":"h","value":"v"}`},
		{"/v1/elections/team-a%2Fleader/resign", `{"candidate":"h"}`},
		{"/v1/elections/team-a%2Fleader/renew", `{"candidate":"h"}`},
	} {
		if r := s.do("POST", c.path, c.body, as(other)...); r.Status != 409 {
			t.Errorf("%s by another key: %d %s", c.path, r.Status, r.Raw)
		}
	}
	r := s.do("POST", "/v1/locks/release-all", `{"resources":["team-a/x","team-a/y"],"holder":"h"}`, as(other)...)
	if r.Status != 200 || fmt.Sprint(r.Body["released"]) != "[]" || fmt.Sprint(r.Body["notHeld"]) != "[team-a/x team-a/y]" {
		t.Errorf("release-all by another key: %d %s", r.Status, r.Raw)
	}
	if s.Service.LastSeq() != before {
		t.Fatal("another key's releases changed something")
	}
	if r := s.do("POST", "/v1/locks/release-all", `{"resources":["team-a/x","team-a/y"],"holder":"h"}`, as(teamA)...); r.Status != 200 ||
		fmt.Sprint(r.Body["released"]) != "[team-a/x team-a/y]" {
		t.Fatalf("release-all by the owner: %d %s", r.Status, r.Raw)
	}
}
