package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview/internal/wire"
)

// fakeRPCServer answers every fence request of a message in one message,
// last first, and hands the test each message's request lines.
// rpcRequest is the part of a request line these tests read, decoded with
// encoding/json: what the client sends, whatever its codec.
type rpcRequest struct {
	ID       uint64 `json:"id"`
	Resource string `json:"resource"`
	Token    int64  `json:"token"`
}

// wsServer serves websockets: serve runs for each connection, numbered
// from 1, and the connection is closed when it returns.
func wsServer(t *testing.T, serve func(conn *websocket.Conn, n int64)) (url string) {
	var conns atomic.Int64
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		serve(conn, conns.Add(1))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// answeringClient is a client (the default config) of a websocket server
// that answers each request with answer's line for it, given the
// connection and its number from 1; an empty line ends the connection
// with the request unanswered. conns is the number of the latest
// connection.
func answeringClient(t *testing.T, answer func(conn *websocket.Conn, n int64, req rpcRequest) string) (c *Client, conns *atomic.Int64) {
	t.Helper()
	conns = new(atomic.Int64)
	url := wsServer(t, func(conn *websocket.Conn, n int64) {
		conns.Store(n)
		for {
			_, msg, err := conn.ReadMessage()
			if err != nil {
				return
			}
			var req rpcRequest
			if err := json.Unmarshal(msg, &req); err != nil {
				t.Errorf("request %q: %v", msg, err)
				return
			}
			line := answer(conn, n, req)
			if line == "" || conn.WriteMessage(websocket.TextMessage, []byte(line)) != nil {
				return
			}
		}
	})
	c, err := New(Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, conns
}

func fakeRPCServer(t *testing.T) (url string, msgs <-chan []string) {
	ch := make(chan []string, 1024)
	url = wsServer(t, func(conn *websocket.Conn, _ int64) {
		for {
			_, msg, err := conn.ReadMessage()
			if err != nil {
				return
			}
			lines := strings.Split(string(msg), "\n")
			ch <- lines
			var out []string
			for i := len(lines) - 1; i >= 0; i-- {
				var req rpcRequest
				if err := json.Unmarshal([]byte(lines[i]), &req); err != nil {
					t.Errorf("request %q: %v", lines[i], err)
					return
				}
				out = append(out, fmt.Sprintf(`{"id":%d,"status":200,"body":{"accepted":true,"idempotencyKey":%q,"token":%d}}`,
					req.ID, fmt.Sprintf("%s:%d", req.Resource, req.Token), req.Token))
			}
			if err := conn.WriteMessage(websocket.TextMessage, []byte(strings.Join(out, "\n"))); err != nil {
				return
			}
		}
	})
	return url, ch
}

// fenceAll makes n fence calls at once with the writer held back until all
// are queued, and checks that each gets its own answer.
func fenceAll(t *testing.T, n int, resource func(i int) string) (msgs <-chan []string) {
	url, msgs := fakeRPCServer(t)
	c, err := New(Config{URL: url, RPC: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	queued := make(chan struct{}, n)
	take := make(chan struct{})
	c.rpc.hooks = rpcHooks{queued: func() { queued <- struct{}{} }, take: take}
	errs := make(chan error, n)
	for i := 1; i <= n; i++ {
		go func() {
			r := resource(i)
			f, err := c.Fence(context.Background(), r, int64(i))
			if err == nil && (f.Token != int64(i) || f.IdempotencyKey != fmt.Sprintf("%s:%d", r, i)) {
				err = fmt.Errorf("call %d got the answer %+v", i, f)
			}
			errs <- err
		}()
	}
	for range n {
		<-queued
	}
	close(take)
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	return msgs
}

// Calls made while the writer is busy go out together, in the order they
// were made, and each caller gets its own answer although the server
// answers them in another order.
func TestRPCQueuedCallsShareOneMessage(t *testing.T) {
	const n = 50
	msgs := fenceAll(t, n, func(i int) string { return fmt.Sprintf("r/%d", i) })
	lines := <-msgs
	if len(lines) != n {
		t.Fatalf("%d calls went out in a message of %d lines, want one message", n, len(lines))
	}
	var last uint64
	for _, l := range lines {
		var req rpcRequest
		json.Unmarshal([]byte(l), &req)
		if req.ID <= last {
			t.Fatalf("request %d sent after %d: not in the order made", req.ID, last)
		}
		last = req.ID
	}
}

// A queue longer than wire.MaxBatch goes out in several messages, none
// over it (the server's limit is not much higher), none losing a call.
func TestRPCLongQueueSplitsAtLines(t *testing.T) {
	const n = 600 // of ~200 bytes each: about two MaxBatch
	msgs := fenceAll(t, n, func(i int) string { return fmt.Sprintf("%0150d", i) })
	total, count := 0, 0
	for total < n {
		lines := <-msgs
		if size := len(strings.Join(lines, "\n")); size > wire.MaxBatch {
			t.Fatalf("a message of %d bytes", size)
		}
		total += len(lines)
		count++
	}
	if count < 2 || total != n {
		t.Fatalf("%d lines in %d messages, want %d in several", total, count, n)
	}
}

// Requests waiting for the writer are bounded: past maxQueued bytes a call
// waits for room, and gives up with its context without sending anything.
func TestRPCQueueIsBounded(t *testing.T) {
	url, msgs := fakeRPCServer(t)
	c, err := New(Config{URL: url, RPC: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	queued := make(chan struct{})
	take := make(chan struct{})
	c.rpc.hooks = rpcHooks{queued: func() { queued <- struct{}{} }, take: take}
	ctx := context.Background()
	errs := make(chan error, 4096)
	fence := func(i int) {
		_, err := c.Fence(ctx, fmt.Sprintf("%0150d", i), int64(i))
		errs <- err
	}
	n := 0
	for full := false; !full; {
		n++
		go fence(n)
		<-queued
		sess := c.rpc.sess
		sess.mu.Lock()
		full = len(sess.out) >= maxQueued
		sess.mu.Unlock()
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Fence(cancelled, "over", 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("a call past the bound: %v, want it to wait and give up with its context", err)
	}
	close(take)
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for seen := 0; seen < n; {
		for _, l := range <-msgs {
			if strings.Contains(l, `"over"`) {
				t.Fatalf("the call that gave up was sent: %s", l)
			}
			seen++
		}
	}
}

// Close ends a call waiting for its answer, as it cancels an HTTP request
// in flight: the call returns context.Canceled and Close returns.
func TestRPCCloseEndsCallsInFlight(t *testing.T) {
	url, _ := fakeRPCServer(t)
	c, err := New(Config{URL: url, RPC: true})
	if err != nil {
		t.Fatal(err)
	}
	queued := make(chan struct{}, 1)
	c.rpc.hooks = rpcHooks{queued: func() { queued <- struct{}{} }, take: make(chan struct{})} // never sent: no answer comes
	errs := make(chan error, 1)
	go func() {
		_, err := c.Fence(context.Background(), "r", 1)
		errs <- err
	}()
	<-queued
	c.Close()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("call in flight at Close: %v, want context.Canceled", err)
	}
	if _, err := c.Fence(context.Background(), "r", 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after Close: %v", err)
	}
}

// A server that stopped serving a connection (shutting down, or a cluster
// leader whose term ended under it) answers 503 unavailable with no time
// to come back, and refused the call without doing it: the client ends
// that connection and sends the call once more on a new one.
func TestStoppedStreamIsLeftForANewOne(t *testing.T) {
	c, conns := answeringClient(t, func(_ *websocket.Conn, n int64, req rpcRequest) string {
		if n > 1 {
			return fmt.Sprintf(`{"id":%d,"status":200,"body":{"accepted":true,"idempotencyKey":"r:%d","token":%d}}`, req.ID, req.Token, req.Token)
		}
		return fmt.Sprintf(`{"id":%d,"status":503,"body":{"error":"the server is shutting down","code":"unavailable"}}`, req.ID)
	})
	if f, err := c.Fence(context.Background(), "r", 7); err != nil || f.Token != 7 {
		t.Fatalf("Fence = %+v, %v; want token 7 from the second connection", f, err)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

// A server whose service ended (a cluster leader's term) answers what the
// connection took and closes it with 1012 and wire.ServiceEnded: a call it
// left unanswered was not taken, and the client sends it once more on a
// new connection. A 1012 for another reason (a proxy restarting) says
// nothing of what was taken: the call is not sent again.
func TestCallLeftByAnEndedServiceIsSentAgain(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		resent       bool
	}{{"service-ended", wire.ServiceEnded, true}, {"other-reason", "proxy restarting", false}} {
		t.Run(tc.name, func(t *testing.T) {
			c, conns := answeringClient(t, func(conn *websocket.Conn, n int64, req rpcRequest) string {
				if n == 1 { // the request read, then the close, unanswered
					conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseServiceRestart, tc.reason), time.Now().Add(10*time.Second))
					return ""
				}
				return fmt.Sprintf(`{"id":%d,"status":200,"body":{"accepted":true,"idempotencyKey":"r:%d","token":%d}}`, req.ID, req.Token, req.Token)
			})
			f, err := c.Fence(context.Background(), "r", 7)
			switch {
			case tc.resent && (err != nil || f.Token != 7 || conns.Load() != 2):
				t.Fatalf("Fence = %+v, %v over %d connections; want token 7 from the second", f, err, conns.Load())
			case !tc.resent && (err == nil || conns.Load() != 1):
				t.Fatalf("Fence = %+v, %v over %d connections; want the close's error, not sent again", f, err, conns.Load())
			}
		})
	}
}
