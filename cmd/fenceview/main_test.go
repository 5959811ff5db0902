package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview/internal/servertest"
	"github.com/fenceview/fenceview/internal/wire"
)

// response is a decoded JSON answer.
type response struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

// num is the integer at key, read from the raw body when there is one:
// Body's numbers are float64, which would round tokens above 2^53. It is
// 0 when key is not an integer.
func (r response) num(key string) int64 {
	if r.Raw == nil { // a part of an answer, decoded already
		v, _ := r.Body[key].(float64)
		return int64(v)
	}
	var fields map[string]json.RawMessage
	var v int64
	if json.Unmarshal(r.Raw, &fields) == nil {
		json.Unmarshal(fields[key], &v)
	}
	return v
}

func (s *testServer) do(method, path string, body any, header ...string) response {
	s.t.Helper()
	if s.bearer != "" && !slices.Contains(header, "Authorization") {
		header = append(header, "Authorization", "Bearer "+s.bearer)
	}
	return doRequest(s.t, method, s.URL()+path, body, header...)
}

func doRequest(t testing.TB, method, url string, body any, header ...string) response {
	t.Helper()
	req := servertest.NewRequest(t, method, url, body, header...)
	a := servertest.Do(t, nil, req)
	checkAgainstSpec(t, req, a.Response, a.Raw)
	return response{Status: a.Status, Header: a.Header, Body: a.Body, Raw: a.Raw}
}

func (s *testServer) acquire(res, holder string, leaseMs int) response {
	s.t.Helper()
	r := s.do("POST", "/v1/locks/"+url.PathEscape(res)+"/acquire", map[string]any{"holder": holder, "leaseMs": leaseMs})
	if r.Status != 200 {
		s.t.Fatalf("acquire %s by %s: %d %s", res, holder, r.Status, r.Raw)
	}
	return r
}

// tokenOf is a grant's token, exact at any size when r has its raw body
// (see num).
func tokenOf(r response) int64 {
	if r.Raw == nil {
		f, _ := r.Body["fencing"].(map[string]any)
		v, _ := f["token"].(float64)
		return int64(v)
	}
	var g struct {
		Fencing struct {
			Token int64 `json:"token"`
		} `json:"fencing"`
	}
	json.Unmarshal(r.Raw, &g)
	return g.Fencing.Token
}

func (s *testServer) fence(res string, token int64) response {
	s.t.Helper()
	return s.do("POST", "/v1/fence/"+url.PathEscape(res), nil, "X-Fencing-Token", itoa(token))
}

func itoa(n int64) string { return strings.TrimSpace(string(must(json.Marshal(n)))) }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// stream connects to the event stream.
type stream struct {
	t    testing.TB
	conn *websocket.Conn
}

func (s *testServer) stream(query string) *stream {
	s.t.Helper()
	var h http.Header
	if s.bearer != "" {
		h = http.Header{"Authorization": {"Bearer " + s.bearer}}
	}
	return dialStream(s.t, s.URL(), query, h)
}

// event is a message of the event stream, as the wire defines it.
type event = wire.Event

func (st *stream) next() event {
	st.t.Helper()
	st.conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // a hang guard, not a timing assertion
	var e event
	_, raw, err := st.conn.ReadMessage()
	if err != nil {
		st.t.Fatalf("reading the stream: %v", err)
	}
	checkMessageAgainstSpec(st.t, "Event", raw)
	if err := json.Unmarshal(raw, &e); err != nil {
		st.t.Fatalf("stream message %q: %v", raw, err)
	}
	return e
}

// The story fenceview exists for: A's lease lapses while it is paused, B
// acquires and writes, A wakes up and writes with its old token.
func TestPausedClientIsFencedOut(t *testing.T) {
	s := startServer(t)
	events := s.stream("")

	a := s.acquire("order:1042", "client-a", 30000)
	s.clock.Advance(31 * time.Second) // A is paused past its lease
	b := s.acquire("order:1042", "client-b", 30000)
	if tokenOf(b) <= tokenOf(a) {
		t.Fatalf("B's token %d not above A's %d", tokenOf(b), tokenOf(a))
	}
	if r := s.fence("order:1042", tokenOf(b)); r.Status != 200 || r.Body["accepted"] != true ||
		r.Body["idempotencyKey"] != "order:1042:"+itoa(tokenOf(b)) {
		t.Fatalf("B's write: %d %s", r.Status, r.Raw)
	}
	r := s.fence("order:1042", tokenOf(a))
	if r.Status != 409 || r.Header.Get("X-Required-Token") != itoa(tokenOf(b)) ||
		r.Body["reason"] != "stale-token" || r.num("presented") != tokenOf(a) || r.num("required") != tokenOf(b) {
		t.Fatalf("A's stale write: %d %v %s", r.Status, r.Header, r.Raw)
	}

	hist := s.do("GET", "/v1/rejections?resource=order:1042", nil)
	rows, _ := hist.Body["rejections"].([]any)
	if hist.Status != 200 || len(rows) != 1 {
		t.Fatalf("rejection history: %d %s", hist.Status, hist.Raw)
	}
	row := rows[0].(map[string]any)
	if row["reason"] != "stale-token" || int64(row["presented"].(float64)) != tokenOf(a) || row["at"] != "2026-09-24T06:14:53.000Z" {
		t.Fatalf("rejection row: %v", row)
	}

	want := []string{"grant", "expire", "grant", "accept", "reject"}
	var last int64
	for i, typ := range want {
		e := events.next()
		if e.Type != typ || e.ResourceID != "order:1042" || e.Seq <= last {
			t.Fatalf("event %d = %+v, want %s with a rising seq", i, e, typ)
		}
		last = e.Seq
		if typ == "reject" && (e.Presented == nil || *e.Presented != tokenOf(a) || *e.Required != tokenOf(b) || e.Reason != "stale-token") {
			t.Fatalf("reject event: %+v", e)
		}
	}
}

func TestFreeLockState(t *testing.T) {
	s := startServer(t)
	r := s.do("GET", "/v1/locks/never-seen", nil)
	if r.Status != 200 || r.Body["locked"] != false || r.Body["holder"] != nil || r.Body["expiresAt"] != nil ||
		r.num("holdCount") != 0 || r.num("token") != 0 {
		t.Fatalf("never-seen lock: %d %s", r.Status, r.Raw)
	}
	if r := s.do("GET", "/v1/resources/never-seen", nil); r.Status != 404 || r.Body["error"] == nil {
		t.Fatalf("unknown resource: %d %s", r.Status, r.Raw)
	}
	g := s.acquire("r", "a", 1000)
	s.do("POST", "/v1/locks/r/release", map[string]any{"holder": "a"})
	r = s.do("GET", "/v1/locks/r", nil)
	if r.Body["locked"] != false || r.num("token") != tokenOf(g) {
		t.Fatalf("released lock: %s", r.Raw)
	}
}

func TestGrantShape(t *testing.T) {
	s := startServer(t, func(m *Main) { m.Issuer = "lock-service" })
	r := s.acquire("shard-0042", "client-a", 30000)
	f := r.Body["fencing"].(map[string]any)
	if r.Body["resourceId"] != "shard-0042" || r.Body["holder"] != "client-a" || r.num("holdCount") != 1 ||
		r.Body["expiresAt"] != "2026-09-24T06:14:52.000Z" || f["issuer"] != "lock-service" ||
		f["scope"] != "resource:shard-0042" || f["issuedAt"] != "2026-09-24T06:14:22.000Z" || f["token"].(float64) != 1 {
		t.Fatalf("grant: %s", r.Raw)
	}
	// Renew keeps the token; default lease is 30 s.
	s.clock.Advance(10 * time.Second)
	rn := s.do("POST", "/v1/locks/shard-0042/renew", map[string]any{"holder": "client-a"})
	if rn.Status != 200 || tokenOf(rn) != 1 || rn.Body["expiresAt"] != "2026-09-24T06:15:02.000Z" {
		t.Fatalf("renew: %d %s", rn.Status, rn.Raw)
	}
	held := s.do("POST", "/v1/locks/shard-0042/acquire", map[string]any{"holder": "client-b"})
	if held.Status != 409 || held.Body["error"] != "lock held" || held.Body["holder"] != "client-a" ||
		held.Body["expiresAt"] != "2026-09-24T06:15:02.000Z" {
		t.Fatalf("held: %d %s", held.Status, held.Raw)
	}
	rel := s.do("POST", "/v1/locks/shard-0042/release", map[string]any{"holder": "client-b"})
	if rel.Status != 409 || rel.Body["error"] != "not lock owner" {
		t.Fatalf("release by non-owner: %d %s", rel.Status, rel.Raw)
	}
	rel = s.do("POST", "/v1/locks/shard-0042/release", map[string]any{"holder": "client-a"})
	if rel.Status != 200 || rel.Body["released"] != true || rel.num("holdCount") != 0 {
		t.Fatalf("release: %d %s", rel.Status, rel.Raw)
	}
}

// Ids that need URL escaping reach the service intact.
func TestEscapedResourceIDs(t *testing.T) {
	s := startServer(t)
	for _, id := range []string{"a/b", "with space", "заказ:42", "100%", "a?b#c"} {
		s.acquire(id, "h", 1000)
		r := s.do("GET", "/v1/resources/"+url.PathEscape(id), nil)
		if r.Status != 200 || r.Body["resourceId"] != id {
			t.Fatalf("%q: %d %s", id, r.Status, r.Raw)
		}
	}
}

// An id with a slash sent unescaped matches no route: the 404 says to
// escape it and names the path meant, which then works.
func TestUnescapedSlashHintsToEscape(t *testing.T) {
	s := startServer(t)
	for _, c := range []struct{ method, path, hint string }{
		{"POST", "/v1/locks/orders/2/acquire", "POST /v1/locks/orders%2F2/acquire"},
		{"POST", "/v1/locks/a/b/c/release", "POST /v1/locks/a%2Fb%2Fc/release"},
		{"GET", "/v1/locks/orders/2", "GET /v1/locks/orders%2F2"},
		{"POST", "/v1/fence/orders/2", "POST /v1/fence/orders%2F2"},
		{"GET", "/v1/resources/orders/2", "GET /v1/resources/orders%2F2"},
		{"POST", "/v1/locks/orders/2/frobnicate", ""},
		{"GET", "/v1/nothing/a/b", ""},
	} {
		r := s.do(c.method, c.path, map[string]any{"holder": "a"}, "X-Fencing-Token", "1")
		hint, _ := r.Body["hint"].(string)
		if r.Status != 404 || hint != c.hint || (c.hint != "" && !strings.Contains(r.Body["error"].(string), "escaped")) {
			t.Fatalf("%s %s: %d %s, want 404 with hint %q", c.method, c.path, r.Status, r.Raw, c.hint)
		}
		if c.hint != "" {
			method, path, _ := strings.Cut(c.hint, " ")
			if r := s.do(method, path, map[string]any{"holder": "a"}, "X-Fencing-Token", "1"); r.Status == 404 && r.Body["hint"] != nil {
				t.Fatalf("the hinted %s: %d %s", c.hint, r.Status, r.Raw)
			}
		}
	}
}

func TestAdminToken(t *testing.T) {
	s := startServer(t, func(m *Main) { m.AdminToken = "s3cret" })
	s.acquire("r", "a", 60000)
	for _, auth := range []string{"", "Bearer wrong", "s3cret", "Bearer s3cret2"} {
		r := s.do("POST", "/v1/locks/r/expire", nil, "Authorization", auth)
		if r.Status != 401 || r.Body["error"] == nil {
			t.Fatalf("expire with %q: %d %s", auth, r.Status, r.Raw)
		}
	}
	if r := s.do("GET", "/v1/locks/r", nil); r.Body["locked"] != true {
		t.Fatalf("refused expire changed the lock: %s", r.Raw)
	}
	r := s.do("POST", "/v1/locks/r/expire", nil, "Authorization", "Bearer s3cret")
	if r.Status != 200 || r.Body["expired"] != true {
		t.Fatalf("expire: %d %s", r.Status, r.Raw)
	}
	if r := s.do("GET", "/v1/locks/r", nil); r.Body["locked"] != false {
		t.Fatalf("lock after expire: %s", r.Raw)
	}
}

func TestDecisionsReachTheHistory(t *testing.T) {
	s := startServer(t)
	r := s.do("POST", "/v1/decisions", map[string]any{"decisions": []map[string]any{
		{"resourceId": "inv:1", "token": 7, "accepted": true, "source": "plugin-a"},
		{"resourceId": "inv:1", "token": 5, "accepted": false, "required": 7, "reason": "stale-token", "source": "plugin-a", "at": "2026-09-24T06:00:00.123Z"},
	}})
	if r.Status != 200 || r.num("recorded") != 2 {
		t.Fatalf("decisions: %d %s", r.Status, r.Raw)
	}
	res := s.do("GET", "/v1/resources/inv:1", nil)
	if res.num("highWaterMark") != 7 || res.num("accepted") != 1 || res.num("rejected") != 1 ||
		res.Body["lastRejectionAt"] != "2026-09-24T06:00:00.123Z" || res.num("lastToken") != 0 {
		t.Fatalf("resource after reports: %s", res.Raw)
	}
	h := s.do("GET", "/v1/rejections?source=plugin-a", nil)
	rows := h.Body["rejections"].([]any)
	if len(rows) != 1 || rows[0].(map[string]any)["at"] != "2026-09-24T06:00:00.123Z" {
		t.Fatalf("history: %s", h.Raw)
	}
	// The next grant is above the reported mark.
	if g := s.acquire("inv:1", "a", 1000); tokenOf(g) != 8 {
		t.Fatalf("token after a reported mark of 7: %d", tokenOf(g))
	}
}

func TestRejectionFiltersAndCursor(t *testing.T) {
	s := startServer(t)
	s.clock.Advance(2 * time.Hour) // reported times are at most a few minutes ahead of the server's clock
	var decisions []map[string]any
	for i := 0; i < 7; i++ {
		res := []string{"a", "b"}[i%2]
		src := []string{"p1", "p2", "p3"}[i%3]
		decisions = append(decisions, map[string]any{"resourceId": res, "token": 1, "accepted": false, "required": 10,
			"source": src, "at": t0.Add(time.Duration(i) * time.Minute).Format(time.RFC3339)})
	}
	decisions = append(decisions, map[string]any{"resourceId": "a", "token": 1, "accepted": false, "required": 10,
		"reason": "foreign-issuer", "source": "p1", "at": t0.Add(time.Hour).Format(time.RFC3339)})
	if r := s.do("POST", "/v1/decisions", map[string]any{"decisions": decisions}); r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	page := func(q string) ([]int64, string) {
		r := s.do("GET", "/v1/rejections?"+q, nil)
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", q, r.Status, r.Raw)
		}
		var ids []int64
		for _, row := range r.Body["rejections"].([]any) {
			ids = append(ids, int64(row.(map[string]any)["id"].(float64)))
		}
		next, _ := r.Body["next"].(string)
		return ids, next
	}
	all, next := page("")
	if len(all) != 8 || next != "" {
		t.Fatalf("all: %v next %q", all, next)
	}
	for i := 1; i < len(all); i++ {
		if all[i] >= all[i-1] {
			t.Fatalf("not newest first: %v", all)
		}
	}
	// Paging with a cursor visits every row once, in order.
	var paged []int64
	cursor := ""
	for {
		q := "limit=3"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		ids, next := page(q)
		paged = append(paged, ids...)
		if next == "" {
			break
		}
		cursor = next
	}
	if len(paged) != 8 || paged[0] != all[0] || paged[7] != all[7] {
		t.Fatalf("paged %v, want %v", paged, all)
	}
	for q, want := range map[string]int{
		"resource=a": 5, "resource=b": 3, "source=p1": 4, "reason=foreign-issuer": 1, "reason=stale-token": 7,
		"since=" + t0.Add(3*time.Minute).Format(time.RFC3339): 5,
		"until=" + t0.Add(3*time.Minute).Format(time.RFC3339): 3,
		"resource=a&source=p1&reason=stale-token":             2,
	} {
		if ids, _ := page(q); len(ids) != want {
			t.Errorf("%s: %d rows, want %d", q, len(ids), want)
		}
	}
}

func TestStreamResumeFilterAndOrigin(t *testing.T) {
	s := startServer(t)
	s.acquire("x", "a", 1000)
	s.acquire("y", "a", 1000)
	s.fence("x", 1)

	// Resume from seq 1: the stored events after it, then live ones.
	st := s.stream("?since=1")
	if e := st.next(); e.Seq != 2 || e.ResourceID != "y" {
		t.Fatalf("first resumed event %+v", e)
	}
	if e := st.next(); e.Seq != 3 || e.Type != "accept" {
		t.Fatalf("second resumed event %+v", e)
	}
	s.fence("y", 1)
	if e := st.next(); e.Seq != 4 || e.ResourceID != "y" {
		t.Fatalf("live event after resume %+v", e)
	}

	// A resource filter sees only its resource.
	fx := s.stream("?resource=x&since=0")
	if e := fx.next(); e.ResourceID != "x" || e.Seq != 1 {
		t.Fatalf("filtered replay %+v", e)
	}
	if e := fx.next(); e.ResourceID != "x" || e.Seq != 3 {
		t.Fatalf("filtered replay %+v", e)
	}
	s.fence("y", 1)
	s.fence("x", 1)
	if e := fx.next(); e.ResourceID != "x" || e.Type != "accept" {
		t.Fatalf("filtered live %+v", e)
	}

	// Browsers from another origin are refused; same origin is welcome.
	u := "ws" + strings.TrimPrefix(s.URL(), "http") + "/v1/events"
	_, res, err := websocket.DefaultDialer.Dial(u, http.Header{"Origin": {"http://evil.example"}})
	if err == nil || res == nil || res.StatusCode != 403 {
		t.Fatalf("foreign origin: err=%v res=%v", err, res)
	}
	conn, _, err := websocket.DefaultDialer.Dial(u, http.Header{"Origin": {s.URL()}})
	if err != nil {
		t.Fatalf("same origin refused: %v", err)
	}
	conn.Close()
}

func TestHealthzAndMetrics(t *testing.T) {
	s := startServer(t)
	if r := s.do("GET", "/healthz", nil); r.Status != 200 || r.Body["status"] != "ok" {
		t.Fatalf("healthz: %d %s", r.Status, r.Raw)
	}
	s.acquire("m", "a", 1000)
	s.fence("m", 1)
	s.fence("m", 2) // unissued
	r := s.do("GET", "/metrics", nil)
	for _, line := range []string{
		"fenceview_grants_total 1",
		"fenceview_fence_accepted_total 1",
		`fenceview_fence_rejected_total{reason="unissued-token"} 1`,
		"fenceview_waiters 0",
		"fenceview_stream_clients 0",
	} {
		if !strings.Contains(string(r.Raw), line+"\n") {
			t.Errorf("metrics lack %q:\n%s", line, r.Raw)
		}
	}
}

// GET /v1/resources/{resource} carries its lock's recent waits and holds
// (in the OpenAPI document too, which every answer is checked against).
func TestResourceShowsWaitAndHoldTimes(t *testing.T) {
	s := startServer(t)
	s.acquire("orders", "a", 30000)
	s.clock.Advance(2500 * time.Millisecond)
	if r := s.do("POST", "/v1/locks/orders/release", map[string]any{"holder": "a"}); r.Status != 200 {
		t.Fatalf("release: %d %s", r.Status, r.Raw)
	}
	r := s.do("GET", "/v1/resources/orders", nil)
	var got struct {
		Times struct {
			Waiters    int
			Wait, Hold struct {
				Count               int
				P50Ms, P99Ms, MaxMs float64
			}
		}
	}
	if err := json.Unmarshal(r.Raw, &got); err != nil {
		t.Fatal(err)
	}
	tm := got.Times
	if tm.Wait.Count != 1 || tm.Wait.MaxMs != 0 || tm.Hold.Count != 1 || tm.Hold.P50Ms != 2500 || tm.Hold.MaxMs != 2500 || tm.Waiters != 0 {
		t.Fatalf("times = %+v in %s", tm, r.Raw)
	}
	// The aggregate histograms, by kind of lock only.
	m := string(s.do("GET", "/metrics", nil).Raw)
	for _, line := range []string{
		`fenceview_lock_hold_seconds_bucket{kind="lock",le="1"} 0`,
		`fenceview_lock_hold_seconds_bucket{kind="lock",le="5"} 1`,
		`fenceview_lock_hold_seconds_sum{kind="lock"} 2.5`,
		`fenceview_lock_wait_seconds_count{kind="lock"} 1`,
		`fenceview_lock_wait_seconds_bucket{kind="lock",le="0.001"} 1`,
		`fenceview_lock_hold_seconds_count{kind="semaphore"} 0`,
		`fenceview_lock_wait_seconds_count{kind="election"} 0`,
	} {
		if !strings.Contains(m, line+"\n") {
			t.Errorf("metrics lack %q", line)
		}
	}
	// Lists stay lean: no times per row.
	if list := s.do("GET", "/v1/resources", nil); containsKey(list.Raw, "times") {
		t.Fatalf("the list carries times: %s", list.Raw)
	}
}

func containsKey(raw []byte, key string) bool {
	var v struct {
		Resources []map[string]any
	}
	json.Unmarshal(raw, &v)
	for _, r := range v.Resources {
		if _, ok := r[key]; ok {
			return true
		}
	}
	return false
}

func TestFlagsBothForms(t *testing.T) {
	m := NewMain()
	if err := m.ParseFlags([]string{"-addr", "127.0.0.1:9", "--db", "x.db", "--issuer=me", "-admin-token=" + testAdminToken}); err != nil {
		t.Fatal(err)
	}
	if m.Addr != "127.0.0.1:9" || m.DBPath != "x.db" || m.Issuer != "me" || m.AdminToken != testAdminToken {
		t.Fatalf("flags: %+v", m)
	}
	t.Setenv("FENCEVIEW_ADMIN_TOKEN", "from-env-"+testAdminToken)
	m = NewMain()
	if err := m.ParseFlags(nil); err != nil || m.AdminToken != "from-env-"+testAdminToken {
		t.Fatalf("env admin token: %q %v", m.AdminToken, err)
	}
	if err := NewMain().ParseFlags([]string{"--no-such-flag"}); err == nil {
		t.Fatal("unknown flag accepted")
	}
}

// 32 clients x 200 acquire/release cycles over 4 resources: every token is
// issued once, per resource they are exactly 1..n, and nothing fails.
func TestConcurrentAcquireRelease(t *testing.T) {
	s := startServer(t)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	const clients, cycles = 32, 200
	resources := []string{"c-0", "c-1", "c-2", "c-3"}
	var mu sync.Mutex
	tokens := map[string][]int64{}
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			holder := fmt.Sprintf("client-%d", c)
			last := map[string]int64{}
			for i := 0; i < cycles; i++ {
				res := resources[(c+i)%len(resources)]
				// Waiters are served by hand-off on release, so no timer
				// (and no clock) is involved in this wait.
				g := post(t, client, s.URL()+"/v1/locks/"+res+"/acquire", fmt.Sprintf(`{"holder":%q,"waitMs":300000}`, holder))
				if g.Status != 200 {
					t.Errorf("acquire: %d %s", g.Status, g.Raw)
					return
				}
				tok := tokenOf(g)
				if tok <= last[res] {
					t.Errorf("%s saw %d after %d on %s", holder, tok, last[res], res)
				}
				last[res] = tok
				mu.Lock()
				tokens[res] = append(tokens[res], tok)
				mu.Unlock()
				if r := post(t, client, s.URL()+"/v1/locks/"+res+"/release", fmt.Sprintf(`{"holder":%q}`, holder)); r.Status != 200 {
					t.Errorf("release: %d %s", r.Status, r.Raw)
					return
				}
			}
		}(c)
	}
	wg.Wait()
	total := 0
	for res, toks := range tokens {
		sort.Slice(toks, func(i, j int) bool { return toks[i] < toks[j] })
		for i, tok := range toks {
			if tok != int64(i+1) {
				t.Fatalf("%s: tokens are not exactly 1..%d (position %d holds %d)", res, len(toks), i, tok)
			}
		}
		total += len(toks)
	}
	if total != clients*cycles {
		t.Fatalf("%d grants, want %d", total, clients*cycles)
	}
}

func post(t *testing.T, client *http.Client, url, body string) response {
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return response{}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := response{Status: resp.StatusCode, Raw: raw}
	json.Unmarshal(raw, &r.Body)
	return r
}

// testAdminToken is an admin token ParseFlags accepts: MinAdminToken bytes.
const testAdminToken = "0123456789abcdef0123456789abcdef"

// The admin token must be at least 32 bytes, from the flag or the
// environment, unless --insecure-short-admin-token says otherwise.
func TestShortAdminTokenRefused(t *testing.T) {
	t.Setenv("FENCEVIEW_ADMIN_TOKEN", "")
	short := testAdminToken[:MinAdminToken-1]
	err := NewMain().ParseFlags([]string{"--admin-token", short})
	if err == nil || !strings.Contains(err.Error(), "--insecure-short-admin-token") || strings.Contains(err.Error(), short) {
		t.Fatalf("31-byte token: %v", err)
	}
	t.Setenv("FENCEVIEW_ADMIN_TOKEN", "admin")
	if err := NewMain().ParseFlags(nil); err == nil {
		t.Fatal("5-byte token from the environment accepted")
	}
	m := NewMain()
	if err := m.ParseFlags([]string{"--insecure-short-admin-token"}); err != nil || m.AdminToken != "admin" || !m.InsecureShortAdminToken {
		t.Fatalf("--insecure-short-admin-token: %v", err)
	}
	t.Setenv("FENCEVIEW_ADMIN_TOKEN", "")
	if err := NewMain().ParseFlags([]string{"--admin-token", testAdminToken}); err != nil {
		t.Fatalf("32-byte token: %v", err)
	}
	if err := NewMain().ParseFlags(nil); err != nil {
		t.Fatalf("no token (auth off on loopback): %v", err)
	}
}
