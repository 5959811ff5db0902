package server_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview/internal/clock"
	"github.com/fenceview/fenceview/internal/server"
	"github.com/fenceview/fenceview/internal/servertest"
)

const hangGuard = 30 * time.Second // bounds a wait for a condition; never a timing assertion

// readUntilClose reads c until it ends and returns the messages read and
// the close code (0: ended without a close frame, as a dropped connection).
func readUntilClose(t *testing.T, c *websocket.Conn) (messages, code int) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(hangGuard))
	for {
		if _, _, err := c.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return messages, ce.Code
			}
			if strings.Contains(err.Error(), "i/o timeout") {
				t.Fatalf("still open after %d messages", messages)
			}
			return messages, 0
		}
		messages++
	}
}

// Revocation used to leave an RPC message already read being applied:
// 9,025 of 12,000 grants were committed after the revoke's answer. Each
// request is now checked against the key before it is applied, and the
// revoke answers once the key's requests already past the check are done:
// after the answer, nothing more of the key is committed.
func TestRevokeStopsRPCMessagesAlreadyRead(t *testing.T) {
	s := servertest.Start(t, server.Config{AdminToken: admin})
	id, cli := newKey(t, s, "worker", "client")
	rpc := openStream(t, s, "/v1/rpc", cli)
	const n = 12000
	for m := 0; m < n/1000; m++ {
		var msg strings.Builder
		for i := m * 1000; i < (m+1)*1000; i++ {
			fmt.Fprintf(&msg, `{"id":%d,"op":"acquire","resource":"rv-%d","holder":"h"}`+"\n", i+1, i)
		}
		if err := rpc.WriteMessage(websocket.TextMessage, []byte(msg.String())); err != nil {
			t.Fatal(err)
		}
	}
	rpc.SetReadDeadline(time.Now().Add(hangGuard))
	if _, m, err := rpc.ReadMessage(); err != nil || !strings.Contains(string(m), `"status":200`) {
		t.Fatalf("first answers: %.200s %v", m, err)
	}
	answered := make(chan struct{})
	go func() { // keep reading, so the connection is not closed for falling behind
		defer close(answered)
		rpc.SetReadDeadline(time.Now().Add(hangGuard))
		for {
			if _, _, err := rpc.ReadMessage(); err != nil {
				return
			}
		}
	}()
	if a := call(t, nil, "DELETE", s.URL()+"/v1/auth/keys/"+id, admin, nil); a.Status != 200 {
		t.Fatalf("revoke: %d %s", a.Status, a.Raw)
	}
	atRevoke := s.Service.Metrics().Grants
	<-answered
	servertest.Eventually(t, "the RPC handler returned", func() bool { return s.API.OpenWebsockets() == 0 })
	if after := s.Service.Metrics().Grants; after != atRevoke || atRevoke >= n {
		t.Fatalf("grants: %d at the revoke's answer, %d once the connection ended (of %d sent)", atRevoke, after, n)
	}
}

// Logging out, or a session running out, used to leave the websockets
// opened with that session open. Both now end them (close 1008), the
// event stream and the RPC stream alike; the key itself still works.
func TestLogoutAndExpiryEndTheSessionsStreams(t *testing.T) {
	fc := clock.NewFake(clock.TestDate)
	s := servertest.Start(t, server.Config{AdminToken: admin, Clock: fc})
	_, cli := newKey(t, s, "worker", "client")
	login := func() *http.Cookie {
		t.Helper()
		c := cookieOf(form(t, s, "/login", url.Values{"key": {cli}}, nil))
		if c == nil {
			t.Fatal("no session cookie")
		}
		return c
	}
	open := func(c *http.Cookie, path string) *websocket.Conn {
		t.Helper()
		ws, res, err := dial(t, wsURL(s, path), "", "Cookie", c.String())
		if err != nil {
			t.Fatalf("%s with a session: %v %v", path, res, err)
		}
		t.Cleanup(func() { ws.Close() })
		return ws
	}
	c := login()
	events, rpc := open(c, "/v1/events"), open(c, "/v1/rpc")
	other := open(login(), "/v1/events") // another session of the same key
	form(t, s, "/logout", nil, c)
	for name, ws := range map[string]*websocket.Conn{"events": events, "rpc": rpc} {
		if _, code := readUntilClose(t, ws); code != websocket.ClosePolicyViolation {
			t.Fatalf("%s after logout: close %d, want 1008", name, code)
		}
	}
	// The other session's stream is still live: an event reaches it.
	call(t, nil, "POST", s.URL()+"/v1/locks/x/acquire", cli, acquireBody("h"))
	other.SetReadDeadline(time.Now().Add(hangGuard))
	if _, m, err := other.ReadMessage(); err != nil || !strings.Contains(string(m), `"grant"`) {
		t.Fatalf("the other session's stream: %s %v", m, err)
	}
	// Its session runs out: the sweeper ends it, and its stream with it.
	fc.Advance(server.SessionTTL + server.SessionSweep)
	if _, code := readUntilClose(t, other); code != websocket.ClosePolicyViolation {
		t.Fatalf("stream of an expired session: close %d, want 1008", code)
	}
	if a := call(t, nil, "GET", s.URL()+"/v1/locks/x", cli, nil); a.Status != 200 {
		t.Fatalf("the key after its sessions ended: %d", a.Status)
	}
}

// The admin token is replaced without a restart: the old one gets 401 and
// its open streams and dashboard sessions end; the new one works.
func TestAdminTokenRotationEndsTheOldTokensStreams(t *testing.T) {
	s := servertest.Start(t, server.Config{AdminToken: admin})
	events := openStream(t, s, "/v1/events", admin)
	session := cookieOf(form(t, s, "/login", url.Values{"key": {admin}}, nil))
	const next = "the-next-admin-token-0123456789abcdef"
	if err := s.SetAdminToken(next); err != nil {
		t.Fatal(err)
	}
	if _, code := readUntilClose(t, events); code != websocket.ClosePolicyViolation {
		t.Fatalf("the old token's stream: close %d, want 1008", code)
	}
	call(t, nil, "GET", s.URL()+"/v1/resources", admin, nil).wantError(t, 401)
	call(t, nil, "GET", s.URL()+"/v1/resources", "", nil, "Cookie", session.String()).wantError(t, 401)
	if a := call(t, nil, "GET", s.URL()+"/v1/resources", next, nil); a.Status != 200 {
		t.Fatalf("the new token: %d %s", a.Status, a.Raw)
	}
	if err := s.SetAdminToken(""); err == nil {
		t.Fatal("an empty admin token (auth off) was accepted")
	}
}

// A viewer that sees nothing used to be able to take every websocket, so
// clients' /v1/rpc got 429. Keys that may not lock hold at most half of
// --max-websockets together; clients keep the other half.
func TestViewersCannotTakeClientsWebsockets(t *testing.T) {
	s := servertest.Start(t, server.Config{AdminToken: admin, Limits: server.Limits{MaxWebsockets: 4}})
	_, viewer := newKey(t, s, "nosy", "viewer", "nothing/")
	_, cli := newKey(t, s, "worker", "client")
	for i := range 2 {
		ws, _, err := dial(t, wsURL(s, "/v1/events"), viewer)
		if err != nil {
			t.Fatalf("viewer stream %d: %v", i, err)
		}
		defer ws.Close()
	}
	if _, res, err := dial(t, wsURL(s, "/v1/events"), viewer); err == nil || res == nil || res.StatusCode != 429 {
		t.Fatalf("viewer stream 3 of a cap of 4: %v %v", res, err)
	}
	for i := range 2 {
		ws, res, err := dial(t, wsURL(s, "/v1/rpc"), cli)
		if err != nil {
			t.Fatalf("client RPC %d beside the viewer's streams: %v %v", i, res, err)
		}
		defer ws.Close()
	}
	if _, res, err := dial(t, wsURL(s, "/v1/rpc"), cli); err == nil || res == nil || res.StatusCode != 429 {
		t.Fatalf("connection 5 of a cap of 4: %v %v", res, err)
	}
}

// One client key held ~48 MB and 4,096 goroutines per RPC connection by
// not reading its answers (workers parked on them). A connection now has
// a fixed budget: its goroutines never pass reader + writer + rpcWorkers,
// whatever it sends; while its answers wait for the writer it is not
// read, and once a write has waited writeWait (10 s) it is closed, not
// buffered for.
func TestRPCClientThatDoesNotReadIsClosed(t *testing.T) {
	s := servertest.Start(t, server.Config{AdminToken: admin})
	_, cli := newKey(t, s, "slow", "client")
	before := goroutines()
	const conns = 4
	var ws [conns]*websocket.Conn
	for i := range ws {
		c := openStream(t, s, "/v1/rpc", cli)
		ws[i] = c
	}
	// Lock-state reads, answered at once and never read: far more answers
	// than the socket buffers hold.
	var msg strings.Builder
	for i := range 4000 {
		fmt.Fprintf(&msg, `{"id":%d,"op":"lock","resource":"r-%d"}`+"\n", i+1, i%50)
	}
	peak := 0
	closed := make(chan int, conns)
	for i, c := range ws {
		go func() {
			for {
				if err := c.WriteMessage(websocket.TextMessage, []byte(msg.String())); err != nil {
					closed <- i
					return
				}
			}
		}()
	}
	deadline := time.Now().Add(hangGuard)
	for left := conns; left > 0; {
		select {
		case <-closed:
			left--
		default:
			if time.Now().After(deadline) {
				t.Fatal("a client that never reads was not closed")
			}
			time.Sleep(time.Millisecond) // sampling the count while the clients write
		}
		peak = max(peak, goroutines())
	}
	// Per connection: the handler (reader), the writer and the workers,
	// plus the test's own writer; net/http's connection goroutine is the
	// handler's.
	if budget := before + conns*(2+64+1); peak > budget {
		t.Fatalf("%d goroutines with %d connections that never read (%d before), budget %d", peak, conns, before, budget)
	}
	servertest.Eventually(t, "every handler returned", func() bool { return s.API.OpenWebsockets() == 0 })
}

// goroutines is the number of live goroutines, counted with the world
// stopped so that one count is one moment (runtime.NumGoroutine reads the
// runtime's free lists while they move).
func goroutines() int {
	n, _ := runtime.GoroutineProfile(nil)
	return n
}

// http.Server.Shutdown neither closes nor waits for hijacked connections:
// a closed server's RPC handlers and their waiting acquires used to live
// on (8,000 of them, seen by the next test). Close now ends them first.
func TestCloseEndsWebsocketsAndTheirWaiters(t *testing.T) {
	s := servertest.Start(t, server.Config{AdminToken: admin})
	call(t, nil, "POST", s.URL()+"/v1/locks/held/acquire", admin, acquireBody("owner"))
	rpc := openStream(t, s, "/v1/rpc", admin)
	events := openStream(t, s, "/v1/events", admin)
	var waits strings.Builder
	for i := range 100 {
		fmt.Fprintf(&waits, `{"id":%d,"op":"acquire","resource":"held","holder":"w%d","waitMs":300000}`+"\n", i+1, i)
	}
	if err := rpc.WriteMessage(websocket.TextMessage, []byte(waits.String())); err != nil {
		t.Fatal(err)
	}
	servertest.Eventually(t, "every acquire waiting", func() bool { return s.Service.Metrics().Waiters == 100 })
	s.Close()
	if n := s.API.OpenWebsockets(); n != 0 {
		t.Fatalf("%d websockets open after Close", n)
	}
	if n := s.Service.Metrics().Waiters; n != 0 {
		t.Fatalf("%d acquires still waiting after Close", n)
	}
	for _, c := range []*websocket.Conn{rpc, events} {
		c.SetReadDeadline(time.Now().Add(hangGuard))
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				break
			}
		}
	}
}
