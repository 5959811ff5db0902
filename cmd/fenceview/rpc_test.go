package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview/client"
)

// rpcConn is a raw connection to the RPC stream.
type rpcConn struct {
	t    testing.TB
	conn *websocket.Conn
}

func (s *testServer) rpc() *rpcConn {
	s.t.Helper()
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(s.URL(), "http")+"/v1/rpc", nil)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { conn.Close() })
	return &rpcConn{t: s.t, conn: conn}
}

type rpcAnswer struct {
	ID     uint64          `json:"id"`
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

// send sends lines as one message and returns the answers by id.
func (c *rpcConn) send(lines ...string) map[uint64]rpcAnswer {
	c.t.Helper()
	if err := c.conn.WriteMessage(websocket.TextMessage, []byte(strings.Join(lines, "\n"))); err != nil {
		c.t.Fatal(err)
	}
	out := map[uint64]rpcAnswer{}
	for len(out) < len(lines) {
		c.conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // a hang guard only
		_, msg, err := c.conn.ReadMessage()
		if err != nil {
			c.t.Fatalf("reading answers (%d of %d so far): %v", len(out), len(lines), err)
		}
		for _, line := range bytes.Split(msg, []byte("\n")) {
			checkMessageAgainstSpec(c.t, "RpcAnswer", line)
			var a rpcAnswer
			if err := json.Unmarshal(line, &a); err != nil {
				c.t.Fatalf("answer %q: %v", line, err)
			}
			out[a.ID] = a
		}
	}
	return out
}

// The RPC stream answers exactly what the JSON API answers: the same script
// of calls against two servers on the same fake clock gives the same
// statuses and bodies.
func TestRPCAnswersLikeTheJSONAPI(t *testing.T) {
	tw := startTwins(t)
	script := []struct {
		op, resource, body string
	}{
		{"acquire", "r/1", `{"holder":"a","leaseMs":1000}`},
		{"acquire", "r/1", `{"holder":"a","leaseMs":1000}`},
		{"acquire", "r/1", `{"holder":"b"}`},
		{"renew", "r/1", `{"holder":"b"}`},
		{"renew", "r/1", `{"holder":"a","leaseMs":5000}`},
		{"fence", "r/1", `{"token":2}`},
		{"fence", "r/1", `{"token":1}`},
		{"fence", "r/1", `{"token":3}`},
		{"fence", "r/1", `{"token":2,"issuer":"elsewhere"}`},
		{"fence", "r/1", `{"token":2,"scope":"resource:r/2"}`},
		{"fence", "r/1", `{}`},
		{"release", "r/1", `{"holder":"b"}`},
		{"release", "r/1", `{"holder":"a"}`},
		{"release", "r/1", `{"holder":"a"}`},
		{"release", "r/1", `{"holder":"a"}`},
		{"acquire", "r/1", `{"holder":""}`},
		{"acquire", "r/1", `{"holder":"a","leaseMs":0}`},
		{"acquire", "r/1", `{"holder":"a","waitMs":-1}`},
		{"acquire", strings.Repeat("x", 161), `{"holder":"a"}`},
	}
	for i, step := range script {
		path := "/v1/locks/" + url.PathEscape(step.resource) + "/" + step.op
		if step.op == "fence" {
			path = "/v1/fence/" + url.PathEscape(step.resource)
		}
		line := fmt.Sprintf(`{"id":%d,"op":%q,"resource":%q,%s`, i+1, step.op, step.resource, strings.TrimPrefix(step.body, "{"))
		if step.body == "{}" {
			line = fmt.Sprintf(`{"id":%d,"op":%q,"resource":%q}`, i+1, step.op, step.resource)
		}
		tw.alike(i, step.op+" "+step.body, "POST", path, step.body, line)
	}
}

// twins are two servers of one issuer and one signing key, so that both
// answer the same requests with the same bytes: one is asked over HTTP,
// the other over its RPC stream.
type twins struct {
	t    *testing.T
	http *testServer
	rpc  *rpcConn
}

func startTwins(t *testing.T) twins {
	t.Helper()
	_, keyPath := signingKeyFile(t)
	sameIssuer := func(m *Main) { m.Issuer = "lock-service"; m.SigningKey = keyPath }
	viaHTTP, viaRPC := startServer(t, sameIssuer), startServer(t, sameIssuer)
	return twins{t: t, http: viaHTTP, rpc: viaRPC.rpc()}
}

// alike sends step i over HTTP (method, path, body), then over RPC (line,
// whose id is i+1), and fails unless both answer alike.
func (tw twins) alike(i int, what, method, path string, body any, line string) {
	tw.t.Helper()
	h := tw.http.do(method, path, body)
	r := tw.rpc.send(line)[uint64(i+1)]
	if r.Status != h.Status || !sameJSON(tw.t, r.Body, h.Raw) {
		tw.t.Fatalf("step %d %s: HTTP %d %s\nRPC %d %s", i, what, h.Status, h.Raw, r.Status, r.Body)
	}
}

func sameJSON(t *testing.T, a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// Bad requests get a 400 answer and change nothing; the connection carries
// on.
func TestRPCBadRequests(t *testing.T) {
	s := startServer(t)
	conn := s.rpc()
	answers := conn.send(
		`{"id":1,"op":"acquire","resource":"r","holder":"a"}`,
		`{"id":2,"op":"steal","resource":"r","holder":"a"}`,
		`{"id":3,"op":"fence","resource":"r","token":"1"}`,
		`{"id":4,"op":"fence","resource":"","token":1}`,
		`not json`,
		`{"id":6,"op":"lock","resource":"r"}`,
	)
	if answers[1].Status != 200 || answers[6].Status != 200 {
		t.Fatalf("good requests: %+v", answers)
	}
	for _, id := range []uint64{2, 3, 4, 0} {
		var body map[string]any
		json.Unmarshal(answers[id].Body, &body)
		if answers[id].Status != 400 || body["error"] == nil {
			t.Errorf("request %d: %d %s", id, answers[id].Status, answers[id].Body)
		}
	}
	if m := s.Service.Metrics(); m.Grants != 1 || m.Accepted != 0 || len(m.Rejected) != 0 {
		t.Fatalf("bad requests changed something: %+v", m)
	}
}

// A connection's reader serves a lone request itself, but never one that
// may wait: an acquire waiting for a held lock leaves the connection free
// for the next request.
func TestRPCAcquireThatWaitsDoesNotHoldTheConnection(t *testing.T) {
	s := startServer(t)
	if r := s.acquire("r", "other", 60_000); r.Status != 200 {
		t.Fatalf("acquire: %d %s", r.Status, r.Raw)
	}
	conn := s.rpc()
	// Alone on the connection, and waiting: the server's clock is not
	// moved, so it waits until the holder releases.
	if err := conn.conn.WriteMessage(websocket.TextMessage, []byte(`{"id":1,"op":"acquire","resource":"r","holder":"a","waitMs":300000}`)); err != nil {
		t.Fatal(err)
	}
	if a := conn.send(`{"id":2,"op":"lock","resource":"r"}`); a[2].Status != 200 || a[1].Status != 0 {
		t.Fatalf("the lock's state while an acquire waits: %+v", a)
	}
	if r := s.do("POST", "/v1/locks/r/release", `{"holder":"other"}`); r.Status != 200 {
		t.Fatalf("release: %d %s", r.Status, r.Raw)
	}
	conn.conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // a hang guard only
	_, msg, err := conn.conn.ReadMessage()
	if err != nil || !bytes.Contains(msg, []byte(`"id":1,`)) || !bytes.Contains(msg, []byte(`"status":200`)) {
		t.Fatalf("the waiting acquire's answer: %s, %v", msg, err)
	}
}

// The Go client over the RPC stream: typed errors as over HTTP, and many
// goroutines sharing one connection each get their own answers.
func TestClientOverRPC(t *testing.T) {
	s := startServer(t)
	c, err := client.New(client.Config{URL: s.URL(), RPC: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()

	a := c.Mutex("inv", "a")
	tokA, err := a.TryLock(ctx, 0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var held *client.HeldError
	if _, err := c.Mutex("inv", "b").TryLock(ctx, 0, time.Second); !errors.As(err, &held) || held.Holder != "a" {
		t.Fatalf("second holder: %v", err)
	}
	s.clock.Advance(2 * time.Second)
	b := c.Mutex("inv", "b")
	tokB, err := b.TryLock(ctx, 0, time.Minute)
	if err != nil || tokB <= tokA {
		t.Fatalf("B after A's lease: %d, %v", tokB, err)
	}
	if _, err := c.Fence(ctx, "inv", tokB); err != nil {
		t.Fatal(err)
	}
	var stale *client.RefusalError
	if _, err := c.Fence(ctx, "inv", tokA); !errors.As(err, &stale) || stale.Required != tokB {
		t.Fatalf("A's stale write: %v", err)
	}
	if err := a.Unlock(ctx); !errors.Is(err, client.ErrLeaseExpired) {
		t.Fatalf("A's unlock after expiry: %v", err)
	}

	// 32 goroutines, 50 grants each, one connection.
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[int64]bool{}
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			m := c.Mutex("shared", fmt.Sprintf("g%d", g))
			for i := 0; i < 50; i++ {
				tok, err := m.TryLock(ctx, time.Minute, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[tok] {
					t.Errorf("token %d granted twice", tok)
				}
				seen[tok] = true
				mu.Unlock()
				if err := m.Unlock(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	if len(seen) != 32*50 {
		t.Fatalf("%d distinct tokens, want %d", len(seen), 32*50)
	}
	if r := s.do("GET", "/v1/rpc", nil); r.Status != http.StatusBadRequest {
		t.Fatalf("plain GET of the RPC route: %d", r.Status)
	}
}
