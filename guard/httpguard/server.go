// Package httpguard fences a downstream HTTP service: writes carry the
// fencing token in headers, and the service refuses stale ones.
//
// Server side, Middleware checks X-Fencing-Token for the resource named by
// X-Resource-Id and records it, in one atomic step, through a guard.Checker
// (*guard.Guard in memory, *sqlguard.Marks in a database, or anything else).
// That is the difference from the usual read-then-continue middleware: a
// middleware that only reads the highest token and lets the request through
// lets two writers pass the same check.
//
//	fence := httpguard.Middleware(httpguard.Config{Checker: guard.New()})
//	mux.Handle("POST /apply", fence(applyHandler))
//
// Missing or invalid input is 400 {"error":"missing or invalid fencing
// token: ...","code":"invalid-token"} (or invalid-request for the
// resource id); a stale token is 409 with X-Required-Token and
// {"error","accepted":false,"reason","presented","required"}. The handler
// finds the accepted token with FromContext.
//
// Check-and-record closes the gap at the door, but the handler's own write
// happens later. So by default the middleware also runs requests for one
// resource one at a time (in this process), from the check to the end of the
// handler: an older writer that passed the check cannot write after a newer
// one. That is exact for a single instance. A service that runs several
// instances should fence the write itself, in the handler, in the same
// transaction (sqlguard.Table, or Marks.On(tx) with the token from
// FromContext), and may then turn serialisation off with
// Config.Concurrent.
//
// Signed tokens: give Middleware a checker in signed mode
// (guard.NewSigned(verifier), or sqlguard Marks.Signed) and every request
// must carry X-Fencing-Signature, the issuer's signature of its token for its
// resource; an unsigned or badly signed token is refused (409, reason
// bad-signature) before it is compared, and never moves a mark. Transport
// sends the signature of a token given with WithSignedToken.
//
// Client side, Transport attaches the headers to requests whose context
// carries a token (WithToken) and turns a fencing 409 into a
// *guard.RefusalError carrying the required token.
package httpguard

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	"github.com/fenceview/fenceview/guard"
)

// Headers of the fencing protocol.
const (
	HeaderToken    = "X-Fencing-Token"
	HeaderResource = "X-Resource-Id"
	HeaderRequired = "X-Required-Token"
	// HeaderSignature carries the token's signature (base64url, no
	// padding) for guards in signed mode.
	HeaderSignature = "X-Fencing-Signature"
	// HeaderAccess says what a check guards at the server's fence: "read"
	// or "write" (the default).
	HeaderAccess = "X-Fencing-Access"
	// HeaderMode asks the server's fence for a mode (fenceview.FenceModeCurrent).
	HeaderMode = "X-Fencing-Mode"
)

// Fence is the accepted token of a request, as handlers see it.
type Fence struct {
	Resource string
	Token    int64
	// Signature is the token's signature as presented ("" when none); in
	// signed mode the middleware verified it before accepting the token.
	Signature string
}

type fenceKey struct{}

// FromContext returns the token the middleware accepted for this request.
func FromContext(ctx context.Context) (Fence, bool) {
	f, ok := ctx.Value(fenceKey{}).(Fence)
	return f, ok
}

// Config is what Middleware is made from. Checker is required; every other
// field's zero value is its default.
type Config struct {
	// Checker checks and records every request's token: *guard.Guard in
	// memory, *sqlguard.Marks in a database, or anything else.
	Checker guard.Checker
	// Resource derives the resource id from the request (e.g. from the
	// path); an error is a 400. Nil: the X-Resource-Id header.
	Resource func(*http.Request) (string, error)
	// OnDecision is called with every decision (accepted or refused),
	// after it is made and before the response; for metrics, logs, or
	// reporting to the fenceview server's POST /v1/decisions. It must not
	// block long.
	OnDecision func(r *http.Request, resourceID string, d guard.Decision)
	// Concurrent lets requests for one resource run their handlers
	// concurrently. Set it only when the handler fences its own write (see
	// the package doc); otherwise an older writer that passed the check
	// can still write after a newer one.
	Concurrent bool
	// AcceptUnsignedTokens makes middleware built from a client
	// (MiddlewareFrom) take any token number, signed or not: whoever can
	// reach the service with a high number then locks the real holder
	// out. For a server that does not sign, or a test. Only MiddlewareFrom
	// reads it.
	AcceptUnsignedTokens bool
}

// Middleware returns middleware that fences every request through
// cfg.Checker: GET and HEAD as reads (IsRead), any other method as a
// write. It panics when cfg.Checker is nil, as http.Handle does on a
// nil handler: that is a mistake in the program, not in a request.
func Middleware(cfg Config) func(http.Handler) http.Handler {
	c := cfg.Checker
	if c == nil {
		panic("httpguard: Middleware without a Checker")
	}
	if cfg.Resource == nil {
		cfg.Resource = headerResource
	}
	locks := newKeyedLocks()
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tok, err := guard.ParseToken(r.Header.Get(HeaderToken))
			if err != nil || len(r.Header.Values(HeaderToken)) > 1 || len(r.Header.Values(HeaderSignature)) > 1 {
				writeJSON(w, http.StatusBadRequest, errMissingToken)
				return
			}
			res, err := cfg.Resource(r)
			if err == nil {
				err = guard.ValidateResourceID(res)
			}
			if err != nil {
				writeJSON(w, http.StatusBadRequest, errorBody{Error: "missing or invalid resource id: send one " + HeaderResource + " header naming the resource (1 to 255 bytes, printable)", Code: CodeInvalidRequest})
				return
			}
			if !cfg.Concurrent {
				unlock, err := locks.lock(r.Context(), res)
				if err != nil {
					writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: "request cancelled while waiting for the resource", Code: CodeUnavailable})
					return
				}
				defer unlock()
			}
			// A checker in signed mode (guard.NewSigned, Marks.Signed)
			// verifies the signature before it compares; others ignore it.
			sig := r.Header.Get(HeaderSignature)
			check := guard.CheckSignedWith
			if IsRead(r) {
				check = guard.CheckReadWith
			}
			d, err := check(r.Context(), c, res, tok, sig)
			if err != nil {
				if errors.Is(err, guard.ErrInvalidResourceID) || errors.Is(err, guard.ErrInvalidToken) {
					writeJSON(w, http.StatusBadRequest, errMissingToken)
					return
				}
				writeJSON(w, http.StatusInternalServerError, errorBody{Error: "fencing check failed", Code: CodeInternal})
				return
			}
			if cfg.OnDecision != nil {
				cfg.OnDecision(r, res, d)
			}
			if !d.Accepted {
				WriteRefusal(w, d)
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), fenceKey{}, Fence{Resource: res, Token: tok, Signature: sig})))
		})
	}
}

// IsRead reports whether the middleware checks r as a read: a GET or a
// HEAD. A read meets the same rule as a write (token >= mark, and the
// mark rises), so a reader of a later read phase fences out a writer
// whose lease ran out; it also takes a shared grant's token (a read
// phase's, RWMutex.RLock's), which a write may not use.
func IsRead(r *http.Request) bool { return r.Method == http.MethodGet || r.Method == http.MethodHead }

func headerResource(r *http.Request) (string, error) {
	if len(r.Header.Values(HeaderResource)) != 1 {
		return "", errors.New("need exactly one " + HeaderResource)
	}
	return r.Header.Get(HeaderResource), nil
}

// errorBody is a refusal that is not a fencing decision: bad input (400)
// or a failure of the check itself (5xx). Code is one of fenceview's
// refusal codes, the same the server's API uses for the same failure.
type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// The refusal codes of the middleware's own errors (docs/errors.md).
const (
	CodeInvalidToken   = "invalid-token"
	CodeInvalidRequest = "invalid-request"
	CodeUnavailable    = "unavailable"
	CodeInternal       = "internal"
)

var errMissingToken = errorBody{Code: CodeInvalidToken,
	Error: "missing or invalid fencing token: send one " + HeaderToken + " header (a positive decimal integer) and at most one " + HeaderSignature}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if r, ok := v.(Refusal); ok { // the common refusal, without reflection
		w.Write(append(r.AppendJSON(make([]byte, 0, 160)), '\n'))
		return
	}
	_ = json.NewEncoder(w).Encode(v)
}

// keyedLocks is one mutex per resource id, held by reference count so the
// map does not grow with every id ever seen. A lock is a 1-slot channel so
// waiting can give up when the request is cancelled.
type keyedLocks struct {
	mu sync.Mutex
	m  map[string]*keyedLock
}

type keyedLock struct {
	ch   chan struct{}
	refs int
}

func newKeyedLocks() *keyedLocks { return &keyedLocks{m: make(map[string]*keyedLock)} }

func (k *keyedLocks) lock(ctx context.Context, key string) (func(), error) {
	k.mu.Lock()
	l := k.m[key]
	if l == nil {
		l = &keyedLock{ch: make(chan struct{}, 1)}
		k.m[key] = l
	}
	l.refs++
	k.mu.Unlock()

	release := func() {
		k.mu.Lock()
		l.refs--
		if l.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
	select {
	case l.ch <- struct{}{}:
		return func() { <-l.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}
