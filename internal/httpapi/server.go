// Package httpapi serves fenceview's JSON API and event stream.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/modules"
)

// Server is the HTTP face of a lock service.
type Server struct {
	Service    fenceview.Services
	History    fenceview.HistoryService
	AdminToken string // when set and Auth is nil, auth is on with this token alone
	Logger     *slog.Logger
	// Metrics serves GET /metrics; StreamLag is told how long each burst of
	// events waited before going out to a stream client. Both optional.
	Metrics   http.Handler
	StreamLag func(time.Duration)
	// ObserveGrant, optional, is told of every grant of a lock, a
	// semaphore's slot, a multi-lock or an election answered over the
	// JSON API or the RPC stream, and how long it took from the request,
	// waiting for the lock included.
	ObserveGrant func(kind fenceview.Kind, took time.Duration)
	// SigningKeys, when set, serves /v1/signing-keys (signing.go).
	SigningKeys SigningKeys
	// MaxWebsockets caps the open event streams and RPC connections
	// together (default DefaultMaxWebsockets).
	MaxWebsockets int
	// RequestTimeout is the http.Server's read and write timeout; a
	// waiting acquire gets its wait on top. Zero: none.
	RequestTimeout time.Duration
	// FenceMode is the least mode of every fence (fenceview.FenceModeMark
	// or empty: each request's own; FenceModeCurrent: all current).
	FenceMode string

	// Overload is the admission control of lock operations, fences,
	// reports and reads (admission.go); nil: its defaults.
	Overload     *Overload
	overloadOnce sync.Once
	slotFull     func() // tests: told when an RPC request waits for its key's in-flight slot

	websockets wsCount
	ops        opGate     // RPC operations being applied, per key (revoke.go)
	keySlots   keySlots   // RPC requests in flight, per key (rpc.go)
	frames     frameCache // the latest events' frames, shared by their watchers (events.go)
	rpcBig     bigMessages
	// In tests: rpcReaderWaits is told each time an RPC reader waits for
	// room, rpcBeforeFlush runs before a writer takes the pending answers,
	// rpcEnding once a connection has taken its credential's end.
	rpcReaderWaits, rpcBeforeFlush, rpcEnding func()

	// Access control (access.go): nil Auth and no AdminToken is auth off.
	Auth     Credentials
	Sessions SessionStore
	Throttle *auth.Throttle // bad credentials per client address; nil: none
	// ClientAddr is the address a request comes from, for the throttle
	// (a cluster node's: the client a follower forwarded for); nil:
	// RemoteAddr.
	ClientAddr   func(*http.Request) string
	AllowedHosts *HostList // with auth off, the Host names answered; nil: any

	mux *http.ServeMux
	adminState
}

// New returns a server with every API route registered. More routes (the
// dashboard, the WebAssembly module) may be added with Handle before use.
func New(svc fenceview.Services, history fenceview.HistoryService, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{Service: svc, History: history, Logger: logger, mux: http.NewServeMux()}
	s.registerOperations()
	s.route("GET /metrics", http.HandlerFunc(s.handleMetrics))
	s.route("GET /healthz", http.HandlerFunc(s.handleHealthz))
	for _, m := range modules.All() {
		s.route("GET /"+m.Name(), serveModule(m))
	}
	s.route("GET /openapi.json", http.HandlerFunc(s.handleOpenAPI))
	s.route("/", http.HandlerFunc(s.handleNoRoute))
	return s
}

// WriteJSON writes v as every answer of the API is written (JSON, not
// cached); cluster mode's own routes answer through it too.
func WriteJSON(w http.ResponseWriter, status int, v any) { writeJSON(w, status, v) }

// Handle registers an extra route, behind the same access control as the
// API's own.
func (s *Server) Handle(pattern string, h http.Handler) { s.route(pattern, h) }

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.Logger.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", v)
			s.writeError(w, r, fenceview.Errorf(fenceview.EINTERNAL, "internal error"))
		}
	}()
	s.mux.ServeHTTP(w, r)
}

// handleNoRoute answers every path no route matched: 405 when another method
// would have matched, 404 otherwise, both as JSON.
func (s *Server) handleNoRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		s.writeError(w, r, fenceview.Errorf(fenceview.EMETHODNOTALLOWED, "method %s not allowed; use %s", r.Method, strings.Join(allow, " or ")))
		return
	}
	err := fenceview.Errorf(fenceview.ENOTFOUND, "no such route: %s %s", r.Method, r.URL.Path)
	if hint := escapeHint(r.Method, r.URL.Path); hint != "" {
		err.Message += "; a resource id with a slash is escaped in the path"
		err.Fields = map[string]any{"hint": r.Method + " " + hint}
	}
	s.writeError(w, r, err)
}

// requireAdmin checks, again, what admit checked by the route: the caller
// may manage the server.
func (s *Server) requireAdmin(r *http.Request) error {
	if !auth.FromContext(r.Context()).Allows(auth.Manage) {
		return fenceview.Errorf(fenceview.EFORBIDDEN, "admin only")
	}
	return nil
}

// writeError writes err as its problem body, with the headers its code
// calls for (problem.SetHeader).
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, body := s.errorBody(r.Context(), err)
	writeJSON(w, status, body)
}

// keyGoneOr is errKeyGone for a request whose key was revoked while it
// waited (whatever the refusal, the key is why), err otherwise.
func keyGoneOr(ctx context.Context, err error) error {
	if ctx.Err() != nil && context.Cause(ctx) == errKeyGone {
		return errKeyGone
	}
	return err
}

// WriteError writes err as every refusal of the API is written (see
// writeError); cluster mode's own routes answer through it too.
func WriteError(w http.ResponseWriter, err error) {
	p := problemOf(err)
	writeJSON(w, p.Status, p)
}

// errorBody is the status and body of err, the same over the JSON API and
// the RPC stream. Only internal errors are logged: the others are the
// client's business.
func (s *Server) errorBody(ctx context.Context, err error) (int, any) {
	err = keyGoneOr(ctx, err)
	s.logError(ctx, err)
	p := problemOf(err)
	return p.Status, p
}

func (s *Server) logError(ctx context.Context, err error) {
	if code := fenceview.ErrorCode(err); code == fenceview.EINTERNAL || code == fenceview.EUNAVAILABLE {
		s.Logger.ErrorContext(ctx, "request failed", "err", err)
	}
}
