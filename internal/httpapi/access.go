package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/auth"
)

// Credentials is the credential logic the API consumes (auth.Keyring is
// one; a cluster may keep keys elsewhere behind the same methods).
type Credentials interface {
	// Enabled reports whether auth is on: when false every request acts
	// as auth.Open.
	Enabled() bool
	// Authenticate returns the principal of a bearer secret, or
	// auth.ErrUnauthenticated.
	Authenticate(secret string) (*auth.Principal, error)
	Create(ctx context.Context, name string, role auth.Role, resources []string) (auth.Key, string, error)
	List() []auth.Key
	Revoke(ctx context.Context, id string) error
}

// SessionStore resolves the dashboard's session cookie (auth.Sessions).
type SessionStore interface {
	Principal(id string) (*auth.Principal, error)
}

// credentials is Auth, or, for callers that only set AdminToken, a keyring
// of the admin token alone.
func (s *Server) credentials() Credentials {
	if s.Auth != nil {
		return s.Auth
	}
	if s.AdminToken == "" {
		return nil
	}
	s.adminOnce.Do(func() {
		s.adminKeys, _ = auth.NewKeyring(context.Background(), nil, s.AdminToken, nil)
	})
	return s.adminKeys
}

// withPrincipal is r acting as p: every request the router sees carries one.
func withPrincipal(r *http.Request, p *auth.Principal) *http.Request {
	return r.WithContext(principalContext(r.Context(), p))
}

// principalContext is ctx acting as p: its principal, and the owner key
// the issuer records on what p holds.
func principalContext(ctx context.Context, p *auth.Principal) context.Context {
	return fenceview.WithOwnerKey(auth.NewContext(ctx, p), p.Owner())
}

// isPage reports whether a route is one of the dashboard's HTML pages.
func isPage(pattern string) bool {
	return strings.HasPrefix(pattern, "GET /") && !strings.HasPrefix(pattern, "GET /v1/") && pattern != "GET /metrics"
}

var errNoCredential = fenceview.Errorf(fenceview.EUNAUTHENTICATED, "a credential is required (Authorization: Bearer <key or admin token>)")

// principal finds the request's credential: a bearer secret, else the
// dashboard's session cookie. An address that has sent too many bad ones
// gets 429 (with Retry-After on w) before its credential is looked at, so
// the answer says nothing about it.
func (s *Server) principal(w http.ResponseWriter, r *http.Request, creds Credentials) (*auth.Principal, error) {
	addr := r.RemoteAddr
	if s.ClientAddr != nil {
		addr = s.ClientAddr(r)
	}
	client := auth.ClientOf(addr)
	if h := r.Header.Values("Authorization"); len(h) > 0 {
		if err := s.Throttle.CheckCredential(client); err != nil {
			return nil, limitAnswer(w, err)
		}
		secret, ok := auth.BearerSecret(h[0])
		if !ok || len(h) > 1 {
			s.Throttle.BadCredential(client)
			return nil, fenceview.Errorf(fenceview.EUNAUTHENTICATED, "Authorization: want one Bearer <key or admin token>")
		}
		p, err := creds.Authenticate(secret)
		if err != nil {
			s.Throttle.BadCredential(client)
			return nil, fenceview.Errorf(fenceview.EUNAUTHENTICATED, "unknown or revoked credential")
		}
		return p, nil
	}
	if s.Sessions != nil {
		if c, err := r.Cookie(auth.SessionCookie); err == nil {
			if err := s.Throttle.CheckCredential(client); err != nil {
				return nil, limitAnswer(w, err)
			}
			p, err := s.Sessions.Principal(c.Value)
			if err != nil {
				s.Throttle.BadCredential(client)
				return nil, fenceview.Errorf(fenceview.EUNAUTHENTICATED, "session expired or ended; log in again")
			}
			return p, nil
		}
	}
	return nil, errNoCredential
}

// limitAnswer is an *auth.LimitError as the API answers it: 429, saying
// in Retry-After (whole seconds) when to try again.
func limitAnswer(w http.ResponseWriter, err error) error {
	var limited *auth.LimitError
	if !errors.As(err, &limited) {
		return err
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(limited.RetryAfter.Seconds())))
	return fenceview.Errorf(fenceview.ELIMIT, "%s", limited.Error())
}

// Gate is the API's access check around a handler served outside a Server
// (a cluster node's own GET /v1/cluster): the same credentials, throttle
// and answers (401, 403, 429), and action required of the principal.
func Gate(creds Credentials, sessions SessionStore, throttle *auth.Throttle, action auth.Action, next http.Handler) http.Handler {
	// The node's own route is never forwarded: RemoteAddr is the client.
	s := &Server{Auth: creds, Sessions: sessions, Throttle: throttle, Logger: slog.New(slog.DiscardHandler)}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := auth.Open
		if creds != nil && creds.Enabled() {
			var err error
			p, err = s.principal(w, r, creds)
			if err == nil && !p.Allows(action) {
				err = fenceview.Errorf(fenceview.EFORBIDDEN, "a %s key may not do this", p.Role)
			}
			if err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		next.ServeHTTP(w, withPrincipal(r, p))
	})
}

// checkBrowser refuses what a web page in a victim's browser could send:
// a state-changing request or websocket from another origin (a form, a
// no-cors fetch), and, with auth off, a request for a host name that is not
// this server's (DNS rebinding turns an attacker's name into 127.0.0.1).
func (s *Server) checkBrowser(r *http.Request, authOn bool) error {
	if !authOn && s.AllowedHosts != nil && !s.AllowedHosts.Allows(r.Host) {
		return fenceview.Errorf(fenceview.EFORBIDDEN, "host %q is not this server's; start it with --allowed-host to accept it", truncate(r.Host, 100))
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		if !websocket.IsWebSocketUpgrade(r) {
			return nil
		}
	}
	if origins := r.Header.Values("Origin"); len(origins) > 1 || (len(origins) == 1 && !sameOrigin(origins[0], r.Host)) {
		return fenceview.Errorf(fenceview.EFORBIDDEN, "cross-origin request refused")
	}
	if strings.EqualFold(r.Header.Get("Sec-Fetch-Site"), "cross-site") {
		return fenceview.Errorf(fenceview.EFORBIDDEN, "cross-site request refused")
	}
	return nil
}

// sameOrigin compares an Origin header's host with the request's Host, as
// gorilla/websocket's default check does (the scheme may differ behind a
// TLS-terminating proxy). "null" and anything unparsable are other origins.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return strings.EqualFold(u.Host, host)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// HostList is the set of Host header values a server answers with auth
// off: its listen address, loopback names (any port: a page cannot make a
// browser send one for the attacker's own name, and a local reverse proxy
// on another port keeps working), and the hosts given with --allowed-host
// (with a port: that port only; without: any).
type HostList struct {
	exact map[string]bool
	names map[string]bool
}

// NewHostList allows listen (host:port) under its own name and every
// loopback name, plus extra.
func NewHostList(listen string, extra []string) *HostList {
	h := &HostList{exact: map[string]bool{}, names: map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}}
	if _, _, err := net.SplitHostPort(listen); err == nil {
		h.exact[strings.ToLower(listen)] = true
	}
	for _, e := range extra {
		e = strings.ToLower(strings.TrimSpace(e))
		if _, _, err := net.SplitHostPort(e); err == nil {
			h.exact[e] = true
		} else if e != "" {
			h.names[strings.Trim(e, "[]")] = true
		}
	}
	return h
}

// Allows reports whether a Host header value names this server.
func (h *HostList) Allows(host string) bool {
	host = strings.ToLower(host)
	if h.exact[host] {
		return true
	}
	name, _, err := net.SplitHostPort(host)
	if err != nil {
		name = host
	}
	return h.names[strings.Trim(name, "[]")]
}

// seeResource refuses a resource outside the caller's prefixes.
func seeResource(ctx context.Context, resource string) error {
	if !auth.FromContext(ctx).Sees(resource) {
		return errNotYours(resource)
	}
	return nil
}

// errNotYours is the refusal of a resource outside the caller's prefixes.
func errNotYours(resource string) error {
	return fenceview.Errorf(fenceview.EFORBIDDEN, "this key may not use resource %q", resource)
}

// adminState is the keyring built from AdminToken alone.
type adminState struct {
	adminOnce sync.Once
	adminKeys *auth.Keyring
}
