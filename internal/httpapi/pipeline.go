package httpapi

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/auth"
)

// The request pipeline. Every request of the API passes through the same
// stages in the same order, whichever transport it came by, so the same
// request gets the same answer:
//
//	stage          JSON API (route, below)                RPC stream (rpcConn.take, rpc.go)
//	resolve        the route's row, once, at registration  the line's op: its row
//	browser check  checkBrowser                            at the upgrade (GET /v1/rpc)
//	authenticate   the bearer secret or session            at the upgrade: the connection's principal
//	authorize      the row's action, then its path's lock  the row's action, then the line's lock
//	pace           paced (pace.go)                         not paced: the key's in-flight slots bound it
//	revocation     gateRequest (revoke.go)                 the gate, per op
//	decode         strictly, the row's fields (wire.go)    strictly, the row's fields
//	admit          a seat (admission.go)                   a seat, or a seat told later (thenAdmission)
//	validate+serve the row's serve (ops.go)                the row's serve or then
//	answer         writeJSON / writeError                  reply
//
// A multi-lock names its locks in its body: they are held to the caller's
// prefixes when it is served, after decoding, on both transports.

// route registers h for pattern behind the pipeline's stages up to the
// revocation gate; the operations' rows (ops.go) continue it with decode,
// admit and serve (operationHandler).
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
