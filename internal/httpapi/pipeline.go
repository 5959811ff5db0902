package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/httpguard"
	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/httpapi/request"
	"github.com/fenceview/fenceview/internal/wire"
)

// The request pipeline. Every request of the API passes through the same
// stages in the same order, whichever transport it came by, so the same
// request gets the same answer. This file runs them; a stage that is more
// than a call lives in the file named beside it:
//
//	stage          JSON API (route, below)                   RPC stream (rpcConn.take, rpc.go)
//	resolve        rowOf: the route's row, at registration    the line's op: its row
//	browser check  authenticate: checkBrowser (access.go)     at the upgrade (GET /v1/rpc)
//	authenticate   authenticate: the bearer secret, session   at the upgrade: the connection's principal
//	authorize      authorized: the row's action, the lock     authorize: the row's action, the line's lock
//	pace           paced (pace.go)                            not paced: the key's in-flight slots bound it
//	revocation     gateRequest (revoke.go)                    the gate, per op
//	decode         operationHandler: the row's fields,        strictly, the row's fields
//	               strictly (wire.go, strict.go)
//	admit          admitAndAnswer: a seat (admission.go)      a seat, or a seat told later (thenAdmission)
//	serve          the row's serve (handlers.go,              dispatchRPC: the row's serve, or its then
//	               primitives.go); the service validates
//	answer         answerOf, then writeJSON                   answerOf, then the connection's reply
//
// A multi-lock names its locks in its body: they are held to the caller's
// prefixes when it is served, after decoding, on both transports.

// route registers h for pattern behind the pipeline's stages up to the
// revocation gate; h continues it: operationHandler for an operation's
// row (decode, admit, serve, answer).
func (s *Server) route(pattern string, h http.Handler) {
	o := rowOf(pattern)
	s.mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := s.admit(w, r, o); ok && s.paced(w, r, o, p) {
			s.gateRequest(w, r, o, p, h)
		}
	}))
}

// admit is the door of a call of o: the browser check and the credential
// (authenticate), then what the caller may do (authorized). It returns the
// principal r acts as, or false when it has answered.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, o *operation) (*auth.Principal, bool) {
	p, ok := s.authenticate(w, r, o)
	return p, ok && s.authorized(w, r, o, p)
}

// rowOf resolves a route to its operation: its row of the table, or, for a
// route outside it (the dashboard's pages, metrics, modules), a row of its
// own saying who may use it.
func rowOf(pattern string) *operation {
	if o := opsByRoute[pattern]; o != nil {
		return o
	}
	action, public := actionOf(pattern)
	return &operation{route: pattern, action: action, public: public}
}

// Routes anyone may use, auth on or off: what a browser needs before it can
// log in, and what guards fetch to verify (modules, public keys).
var publicRoutes = map[string]bool{
	"GET /healthz":           true,
	"GET /guard.wasm":        true,
	"GET /guard-extism.wasm": true,
	"GET /static/":           true,
	"GET /login":             true,
	"POST /login":            true,
	"POST /logout":           true,
	"GET /favicon.ico":       true,
	"GET /v1/openapi.json":   true,
	"GET /openapi.json":      true,
}

// The action of a request no route matched: a 404 or 405 for anyone signed
// in. The operations' own actions are in their table (ops.go).
const noRouteAction = auth.Read

// actionOf classifies a route. Unknown state-changing routes are admin's:
// a route added without a line here is closed, not open.
func actionOf(pattern string) (a auth.Action, public bool) {
	if publicRoutes[pattern] || (strings.HasPrefix(pattern, "GET /") && strings.HasSuffix(pattern, ".wasm") && strings.Count(pattern, "/") == 1) {
		return 0, true // and every published module
	}
	if o := opsByRoute[pattern]; o != nil {
		return o.action, o.public
	}
	if pattern == "/" {
		return noRouteAction, false
	}
	if strings.HasPrefix(pattern, "GET ") {
		return auth.Read, false
	}
	return auth.Manage, false
}

// authenticate is the browser check, then the credential: the principal r
// acts as, or false when it has answered.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request, o *operation) (*auth.Principal, bool) {
	creds := s.credentials()
	on := creds != nil && creds.Enabled()
	if err := s.checkBrowser(r, on); err != nil {
		s.writeError(w, r, err)
		return nil, false
	}
	if !on {
		// Auth off: everyone is the open principal, said here rather than
		// left to a default.
		return auth.Open, true
	}
	if o.public {
		// Public routes never look at a credential: they serve what anyone
		// may see, as nobody.
		return auth.Anonymous, true
	}
	p, err := s.principal(w, r, creds)
	if err != nil && fenceview.ErrorCode(err) != fenceview.ELIMIT &&
		isPage(o.route) && r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/html") {
		// A browser opening the dashboard: to the login form, and back.
		http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return nil, false
	}
	if err != nil {
		s.writeError(w, r, err)
		return nil, false
	}
	return p, true
}

// authorized checks that p may call o (authorize), answering when not.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request, o *operation, p *auth.Principal) bool {
	if o.public {
		return true
	}
	resource := ""
	if o.target == targetResource {
		resource = r.PathValue("resource")
	}
	if err := authorize(p, o, resource); err != nil {
		s.writeError(w, r, err)
		return false
	}
	return true
}

// authorize is the pipeline's authorization of p's call of o: p's role,
// then the lock its path or line names (valid, and within p's prefixes).
// A multi-lock's locks are in its body, held to the prefixes when it is
// served.
func authorize(p *auth.Principal, o *operation, resource string) error {
	if !p.Allows(o.action) {
		return fenceview.Errorf(fenceview.EFORBIDDEN, "a %s key may not do this", p.Role)
	}
	if o.target == targetResource {
		if err := guard.ValidateResourceID(resource); err != nil {
			return fenceview.Errorf(fenceview.EINVALID, "%v", err)
		}
		if !p.Sees(resource) {
			return errNotYours(resource)
		}
	}
	return nil
}

// operationHandler is the pipeline's rest for o over the JSON API, once
// the request is authorized and through the gate (route): the body read
// as the RPC stream reads o's line, then o's serve once admitted.
func (s *Server) operationHandler(o *operation) http.HandlerFunc {
	hasBody := !strings.HasPrefix(o.route, "GET ")
	return func(w http.ResponseWriter, r *http.Request) {
		c := opCall{opBody: opBody{op: o.op, fields: o.fields}, http: r}
		if hasBody {
			if err := decode(w, r, &c.opBody, request.MaxBody, o.emptyBody); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		c.req.Op = o.op
		if o.target == targetResource {
			c.req.Resource = r.PathValue("resource") // authorized by the pipeline (authorized)
		}
		if o.target == targetName {
			c.req.Name = r.PathValue("name")
		}
		var wait time.Duration
		if c.req.Waits() {
			wait = min(millis(c.req.WaitMs), fenceview.MaxWait)
			s.allowWait(w, wait)
		}
		ctx := r.Context()
		serve := func() (int, any) {
			out, err := o.serve(s, ctx, &c)
			return s.answerOf(ctx, out, err)
		}
		s.admitAndAnswer(w, r, o, wait, serve)
	}
}

// handlerOf is the pipeline's rest for a route only the JSON API has:
// admission when its row admits it, then its handle, whose answer the
// answer stage writes.
func (s *Server) handlerOf(o *operation) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		serve := func() (int, any) {
			out, err := o.handle(s, w, r)
			return s.answerOf(ctx, out, err)
		}
		s.admitAndAnswer(w, r, o, 0, serve)
	}
}

// admitAndAnswer is the pipeline's admit and answer stages over the JSON
// API: serve runs once admission gives o's call a seat (at once when o is
// not admitted), and its answer is written.
func (s *Server) admitAndAnswer(w http.ResponseWriter, r *http.Request, o *operation, wait time.Duration, serve func() (int, any)) {
	status, out := 0, any(nil)
	if o.admitted() {
		flow, fclass := flowOf(auth.FromContext(r.Context()), s.clientAddr(r))
		status, out = s.admitted(r.Context(), flow, fclass, o.class, wait, nil, serve)
	} else {
		status, out = serve()
	}
	writeJSON(w, status, out)
}

// dispatchRPC serves one request of the RPC stream, authorized when it
// was read (rpcConn.take), through its operation's serve, as the JSON API
// does; origin (rpc:<host>) is the connection's source when auth is off.
func (s *Server) dispatchRPC(ctx context.Context, req wire.Request, origin string) (int, any) {
	c := opCall{opBody: opBody{req: req}, origin: origin}
	out, err := opsByName[req.Op].serve(s, ctx, &c)
	return s.answerOf(ctx, out, err)
}

// answerOf is the pipeline's answer stage: what an operation's serve
// returned as the status and body both transports write. A refused fence
// is a decision, not an error: 409 with the guard's refusal body.
func (s *Server) answerOf(ctx context.Context, out any, err error) (int, any) {
	if err != nil {
		return s.errorBody(ctx, err)
	}
	switch out := out.(type) {
	case httpguard.Refusal:
		return http.StatusConflict, out
	case createdBody:
		return http.StatusCreated, out.body
	}
	return http.StatusOK, out
}

// createdBody is an answer that created what it describes: 201 Created.
type createdBody struct{ body any }

func created(body any) any { return createdBody{body} }

// headerSetter is an answer body that carries headers of its own: a
// refusal's problem (Retry-After, WWW-Authenticate), a refused fence's
// httpguard.Refusal (X-Required-Token).
type headerSetter interface {
	SetHeader(h http.Header)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	buf := getBuffer()
	defer putBuffer(buf)
	b, ok := wire.AppendBody(buf.AvailableBuffer(), v)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			status, b = http.StatusInternalServerError, []byte(`{"error":"internal error","code":"internal"}`)
		}
	}
	b = append(b, '\n')
	h := w.Header()
	if hs, ok := v.(headerSetter); ok {
		hs.SetHeader(h)
	}
	h["Content-Type"] = headerJSON
	h["Cache-Control"] = headerNoStore
	w.WriteHeader(status)
	w.Write(b)
}
