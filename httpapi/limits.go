package httpapi

import (
	"net/http"
	"time"

	"github.com/fenceview/fenceview"
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

// openWebsocket counts a websocket (event stream or RPC) against the
// server's cap, or answers 429 and reports false. The caller must call
// closeWebsocket when a true answer's connection ends.
func (s *Server) openWebsocket(w http.ResponseWriter, r *http.Request) bool {
	max := s.MaxWebsockets
	if max <= 0 {
		max = DefaultMaxWebsockets
	}
	if n := s.websockets.Add(1); n > int64(max) {
		s.websockets.Add(-1)
		s.writeError(w, r, fenceview.Errorf(fenceview.ELIMIT,
			"%d websockets are open, the server's limit (--max-websockets); close one or retry later", max))
		return false
	}
	return true
}

func (s *Server) closeWebsocket() { s.websockets.Add(-1) }

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
