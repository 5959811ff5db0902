package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/httpapi"
	"github.com/fenceview/fenceview/internal/httpapi/request"
)

// forwardedHeader marks a request a follower forwarded, so that a node that
// is not (or no longer) the leader answers 503 instead of forwarding again:
// two nodes with different views of the leader never bounce a request.
const forwardedHeader = "X-Fenceview-Forwarded-By"

// ServeHTTP answers as the leader or forwards to the leader. While there is
// none it can reach, it waits for the next one, up to failoverWait, and
// then says there is none (503 with Retry-After).
func (n *Node) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/cluster" {
		switch {
		case n.cfg.Access != nil:
			n.cfg.Access(http.HandlerFunc(n.serveCluster)).ServeHTTP(w, r)
		case n.creds.Enabled():
			httpapi.WriteError(w, fenceview.Errorf(fenceview.EUNAUTHENTICATED, "a credential is required"))
		default:
			n.serveCluster(w, r)
		}
		return
	}
	deadline := time.Now().Add(failoverWait)
	var body []byte // a forwarded request's body, kept to forward it again
	retryable, read := true, false
	for {
		changed := n.changes()
		if t := n.current.Load(); t != nil {
			if body != nil { // read to forward it, then this node came to lead
				r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			}
			n.serveLeading(w, r, t)
			return
		}
		l := n.leader.Load()
		if r.Header.Get(forwardedHeader) != "" && (l == nil || l.ID != n.self.ID) {
			// Another node took this one for the leader: it holds the
			// request, not this one (no bouncing between views).
			unavailable(w, "the leader changed; retry")
			return
		}
		if l != nil && l.ID != n.self.ID {
			if !read {
				read = true
				if !n.extendDeadlines(w, r) {
					return
				}
				var ok bool
				if body, retryable, ok = keepBody(w, r); !ok {
					return
				}
			}
			if n.forward(w, r, l, body, retryable) {
				return
			}
			// The leader could not be reached and nothing was sent: its
			// process may be gone. Wait for the next, and forward again.
		}
		// No leader, or this node won and is not serving yet, or the
		// leader is unreachable: wait a little for the next one.
		if time.Now().After(deadline) {
			unavailable(w, "no cluster leader; retry")
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-changed:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// serveLeading answers r as the leader of term t.
func (n *Node) serveLeading(w http.ResponseWriter, r *http.Request, t *term) {
	if (r.Method == http.MethodGet || r.Method == http.MethodHead) && !websocket.IsWebSocketUpgrade(r) {
		// A paused leader may not know yet that it was deposed: a read
		// answers only after etcd confirms the term still stands.
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		err := n.confirm(ctx, t)
		cancel()
		if err != nil {
			unavailable(w, "this node's leadership could not be confirmed; retry")
			return
		}
	}
	t.handler.ServeHTTP(&retryWriter{ResponseWriter: w}, r)
}

// keepBody reads r's body, when it is small enough, so that it can be
// forwarded again after a leader could not be reached: retryable says so
// (no body, or one kept). ok is false when the answer is written.
func keepBody(w http.ResponseWriter, r *http.Request) (body []byte, retryable, ok bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true, true
	}
	if r.ContentLength < 0 || r.ContentLength > request.MaxBody {
		return nil, false, true // streamed through once: too large to keep
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, request.MaxBody))
	if err != nil {
		httpapi.WriteError(w, fenceview.Errorf(fenceview.EINVALID, "reading request body: %v", err))
		return nil, false, false
	}
	return body, true, true
}

// dialFailed, in a forwarded request's context, is set by the proxy when
// the leader could not be reached (nothing sent, nothing answered).
type dialFailed struct{}

// forward sends r to leader l and reports whether it was answered: false
// when l could not be reached and r, retryable, may go to the next one.
func (n *Node) forward(w http.ResponseWriter, r *http.Request, l *Member, body []byte, retryable bool) bool {
	if !retryable {
		n.proxy(l.URL).ServeHTTP(w, r)
		return true
	}
	failed := false
	fr := r.WithContext(context.WithValue(r.Context(), dialFailed{}, &failed))
	if body != nil {
		fr.Body, fr.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	}
	n.proxy(l.URL).ServeHTTP(w, fr)
	return !failed
}

// extendDeadlines lifts this node's request timeout where the leader sets
// a longer one, and reports false when it has answered: an acquire may wait
// fenceview.MaxWait on top of the timeout, once its body is in (read here,
// within the timeout, so a body sent a byte at a time still ends with it).
// Everything else keeps the node's timeout; a websocket has none once the
// proxy hijacks it (net/http clears it), and the leader bounds it.
func (n *Node) extendDeadlines(w http.ResponseWriter, r *http.Request) bool {
	if n.cfg.RequestTimeout <= 0 {
		return true
	}
	if r.Method == http.MethodPost && mayWait(r.URL.Path) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, request.MaxBody))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				httpapi.WriteError(w, fenceview.Errorf(fenceview.ETOOLARGE, "request body over %d bytes", request.MaxBody))
			} else {
				httpapi.WriteError(w, fenceview.Errorf(fenceview.EINVALID, "reading request body: %v", err))
			}
			return false
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		deadline := time.Now().Add(n.cfg.RequestTimeout + fenceview.MaxWait)
		rc := http.NewResponseController(w)
		rc.SetReadDeadline(deadline)
		rc.SetWriteDeadline(deadline)
	}
	return true
}

// mayWait reports whether a POST to path may wait for a lock: a lock's,
// a semaphore's or a multi-lock's acquire, or a campaign.
func mayWait(path string) bool {
	switch {
	case path == "/v1/locks/acquire-all":
		return true
	case strings.HasPrefix(path, "/v1/locks/"), strings.HasPrefix(path, "/v1/semaphores/"):
		return strings.HasSuffix(path, "/acquire")
	case strings.HasPrefix(path, "/v1/elections/"):
		return strings.HasSuffix(path, "/campaign")
	}
	return false
}

// proxy returns the reverse proxy to the leader at base, made once.
func (n *Node) proxy(base string) http.Handler {
	n.proxyMu.Lock()
	defer n.proxyMu.Unlock()
	if p, ok := n.proxies[base]; ok {
		return p
	}
	target, _ := url.Parse(base)
	p := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host // the leader checks Origin against the Host the client used
			pr.SetXForwarded()
			// Set here, after the proxy has dropped the headers the client's
			// Connection header names: set before, a client sending
			// "Connection: X-Fenceview-Forwarded-By" would strip the loop
			// guard, and two nodes that disagree on the leader would bounce
			// the request between them.
			pr.Out.Header.Set(forwardedHeader, n.self.ID)
			pr.Out.Header.Set(clientHeader, pr.In.RemoteAddr) // peer.go
			pr.Out.Header.Set(peerHeader, n.peerSecret)
		},
		Transport:     n.proxyRT,
		FlushInterval: -1, // stream answers as they come
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			var op *net.OpError
			if errors.As(err, &op) && op.Op == "dial" {
				// Nothing was sent: the request certainly changed nothing,
				// and may go to the next leader (forward).
				if failed, ok := r.Context().Value(dialFailed{}).(*bool); ok {
					*failed = true
					return
				}
				unavailable(w, "the leader is unreachable; retry")
				return
			}
			n.log.Warn("forwarding to the leader failed", "leader", base, "err", err)
			unavailable(w, "the leader did not answer; retry")
		},
	}
	n.proxies[base] = p
	return p
}

func (n *Node) serveCluster(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		httpapi.WriteError(w, fenceview.Errorf(fenceview.EMETHODNOTALLOWED, "method %s not allowed; use GET", r.Method))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	st, err := n.Status(ctx)
	if err != nil {
		unavailable(w, "etcd did not answer; retry")
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, st)
}

func unavailable(w http.ResponseWriter, msg string) {
	httpapi.WriteError(w, fenceview.Errorf(fenceview.EUNAVAILABLE, "%s", msg)) // with Retry-After
}

// retryWriter adds Retry-After to the leader's own 503s (a term ending
// under a request), so every 503 of a cluster says when to retry.
type retryWriter struct {
	http.ResponseWriter
}

func (rw *retryWriter) WriteHeader(code int) {
	if code == http.StatusServiceUnavailable && rw.Header().Get("Retry-After") == "" {
		rw.Header().Set("Retry-After", "1")
	}
	rw.ResponseWriter.WriteHeader(code)
}

func (rw *retryWriter) Flush() {
	if f, ok := rw.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack lets the websocket routes take the connection over.
func (rw *retryWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(rw.ResponseWriter).Hijack()
}

func (rw *retryWriter) Unwrap() http.ResponseWriter { return rw.ResponseWriter }
