package httpapi

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/auth"
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
}

// openWebsocket counts a websocket (event stream or RPC) against the
// server's cap, and a key that may not lock against the readers' half of
// it, or answers 429 and reports false. When true, the caller must call
// release when the connection ends.
func (s *Server) openWebsocket(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	limit := s.MaxWebsockets
	if limit <= 0 {
		limit = DefaultMaxWebsockets
	}
	if n := s.websockets.all.Add(1); n > int64(limit) {
		s.websockets.all.Add(-1)
		s.writeError(w, r, fenceview.Errorf(fenceview.ELIMIT,
			"%d websockets are open, the server's limit (--max-websockets); close one or retry later", limit))
		return nil, false
	}
	if auth.FromContext(r.Context()).Allows(auth.Lock) {
		return func() { s.websockets.all.Add(-1) }, true
	}
	readers := max(1, limit/2)
	if n := s.websockets.readers.Add(1); n > int64(readers) {
		s.websockets.readers.Add(-1)
		s.websockets.all.Add(-1)
		s.writeError(w, r, fenceview.Errorf(fenceview.ELIMIT,
			"%d websockets of keys that may not lock are open, half the server's limit (--max-websockets); close one or retry later", readers))
		return nil, false
	}
	return func() { s.websockets.readers.Add(-1); s.websockets.all.Add(-1) }, true
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
