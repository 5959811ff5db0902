package httpapi

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/auth"
	"github.com/gorilla/websocket"
)

// Defaults of the connection limits (see Server).
const (
	DefaultMaxWebsockets  = 1000
	DefaultRequestTimeout = time.Minute
	// rpcMaxWaiting bounds the acquires with waitMs > 0 that one RPC
	// connection may have waiting at once; HTTP/1.1 has one per
	// connection, HTTP/2 at most its concurrent streams.
	rpcMaxWaiting = 256
)

// wsCount is the open websockets: all of them, and those of keys that
// may not take locks (viewers, guards), which hold at most half the cap
// together, so clients' /v1/rpc always has the other half.
type wsCount struct {
	all, readers atomic.Int64

	// Hijacked connections outlive http.Server.Shutdown, which neither
	// closes nor waits for them: CloseWebsockets does both.
	mu       sync.Mutex
	conns    map[*websocket.Conn]struct{}
	closing  bool
	handlers sync.WaitGroup
}

// hold registers an upgraded connection so CloseWebsockets can end it,
// and reports false (the connection closed) once the server is closing.
// The caller drops it when its handler returns.
func (s *Server) hold(conn *websocket.Conn) bool {
	ws := &s.websockets
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closing {
		conn.Close()
		return false
	}
	if ws.conns == nil {
		ws.conns = make(map[*websocket.Conn]struct{})
	}
	ws.conns[conn] = struct{}{}
	return true
}

func (s *Server) drop(conn *websocket.Conn) {
	ws := &s.websockets
	ws.mu.Lock()
	delete(ws.conns, conn)
	ws.mu.Unlock()
}

// CloseWebsockets closes every event stream and RPC connection, refuses
// new ones, and returns when their handlers have: an RPC connection's
// waiting acquires give up and its requests in flight finish first.
func (s *Server) CloseWebsockets() {
	ws := &s.websockets
	ws.mu.Lock()
	ws.closing = true
	for c := range ws.conns {
		c.Close()
	}
	ws.mu.Unlock()
	ws.handlers.Wait()
}

// openWebsocket counts a websocket (event stream or RPC) against the
// server's cap, and a key that may not lock against the readers' half of
// it, or answers 429 and reports false. When true, the caller must call
// release when the connection ends.
func (s *Server) openWebsocket(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	ws := &s.websockets
	ws.mu.Lock()
	if ws.closing {
		ws.mu.Unlock()
		s.writeError(w, r, fenceview.Errorf(fenceview.EUNAVAILABLE, "the server is shutting down"))
		return nil, false
	}
	ws.handlers.Add(1)
	ws.mu.Unlock()
	done := ws.handlers.Done
	limit := s.MaxWebsockets
	if limit <= 0 {
		limit = DefaultMaxWebsockets
	}
	if n := s.websockets.all.Add(1); n > int64(limit) {
		s.websockets.all.Add(-1)
		done()
		s.writeError(w, r, fenceview.Errorf(fenceview.ELIMIT,
			"%d websockets are open, the server's limit (--max-websockets); close one or retry later", limit))
		return nil, false
	}
	if auth.FromContext(r.Context()).Allows(auth.Lock) {
		return func() { s.websockets.all.Add(-1); done() }, true
	}
	readers := max(1, limit/2)
	if n := s.websockets.readers.Add(1); n > int64(readers) {
		s.websockets.readers.Add(-1)
		s.websockets.all.Add(-1)
		done()
		s.writeError(w, r, fenceview.Errorf(fenceview.ELIMIT,
			"%d websockets of keys that may not lock are open, half the server's limit (--max-websockets); close one or retry later", readers))
		return nil, false
	}
	return func() { s.websockets.readers.Add(-1); s.websockets.all.Add(-1); done() }, true
}

// OpenWebsockets is the number of event streams and RPC connections being
// served: a connection counts until its handler has returned.
func (s *Server) OpenWebsockets() int { return int(s.websockets.all.Load()) }

// allowWait gives a request that waits for a lock its wait on top of the
// server's request timeout, so the timeout bounds the work, not the wait.
func (s *Server) allowWait(w http.ResponseWriter, wait time.Duration) {
	if s.RequestTimeout <= 0 || wait <= 0 {
		return
	}
	rc := http.NewResponseController(w)
	deadline := time.Now().Add(wait + s.RequestTimeout)
	rc.SetReadDeadline(deadline) // the server's read deadline would end the wait's context
	rc.SetWriteDeadline(deadline)
}
