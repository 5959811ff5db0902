package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/auth"
)

// Frames the event stream writes itself, past gorilla's writer, arrive
// through a real gorilla client as the messages they carry, at every
// length encoding (7-bit, 16-bit, 64-bit) and its edges.
func TestTextFramesReadByGorilla(t *testing.T) {
	sizes := []int{0, 1, 125, 126, 127, 65535, 65536, 70000}
	payload := func(n int) []byte { return bytes.Repeat([]byte{'a' + byte(n%26)}, n) }
	c := dialHandler(t, func(w http.ResponseWriter, r *http.Request) {
		conn, out, err := upgradeBatched(w, r)
		if err != nil {
			return
		}
		defer conn.Close()
		for _, n := range sizes {
			out.Write(textFrame(payload(n)))
		}
		out.Flush()
		conn.ReadMessage() // until the client leaves
	})
	for _, n := range sizes {
		typ, msg, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("message of %d bytes: %v", n, err)
		}
		if typ != websocket.TextMessage || !bytes.Equal(msg, payload(n)) {
			t.Fatalf("message of %d bytes: type %d, %d bytes", n, typ, len(msg))
		}
	}
}

// dialHandler serves one handler on a test server and dials it as a
// websocket; the connection and the server close as the test ends.
func dialHandler(t *testing.T, handler http.HandlerFunc) *websocket.Conn {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// countingConn counts the writes that reach the socket.
type countingConn struct {
	net.Conn
	writes atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// Every batch of events waiting when a watcher's writer wakes goes to its
// socket in one write, each event still its own message, in order.
func TestEventStreamWritesWaitingBatchesOnce(t *testing.T) {
	s := newTestAPI(t)
	ctx := context.Background()
	sub := s.Service.Subscribe("", streamBuffer)
	defer s.Service.Unsubscribe(sub)
	const n = 40 // 20 grant cycles, each its own commit and batch
	for i := 0; i < n/2; i++ {
		res := fmt.Sprintf("w%d", i)
		if _, err := s.Service.Acquire(ctx, fenceview.AcquireRequest{ResourceID: res, Holder: "h", Lease: time.Minute, Wait: 0}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Service.Release(ctx, res, "h"); err != nil {
			t.Fatal(err)
		}
	}
	if len(sub.Events()) < n/2 {
		t.Fatalf("%d batches waiting, want at least %d", len(sub.Events()), n/2)
	}
	writes := make(chan int64, 1)
	c := dialHandler(t, func(w http.ResponseWriter, r *http.Request) {
		conn, out, err := upgradeBatched(w, r) // the handshake flushed, as handleEvents does
		if err != nil {
			return
		}
		defer conn.Close()
		cc := &countingConn{Conn: out.Conn}
		st := &eventStream{conn: conn, out: &batchedConn{Conn: cc, w: bufio.NewWriterSize(cc, 32<<10)},
			sub: sub, p: auth.Open, last: -1, frames: new(frameCache)}
		gone := make(chan struct{})
		go st.readPump(gone)
		st.writePump(gone) // until the client leaves
		writes <- cc.writes.Load()
	})
	var last int64
	for i := 0; i < n; i++ {
		var e struct{ Seq int64 }
		if err := c.ReadJSON(&e); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if e.Seq <= last {
			t.Fatalf("event %d: seq %d after %d", i, e.Seq, last)
		}
		last = e.Seq
	}
	c.Close()
	if got := <-writes; got != 1 {
		t.Fatalf("%d events in %d socket writes, want 1", n, got)
	}
}
