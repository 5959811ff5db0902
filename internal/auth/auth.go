// Package auth is fenceview's credential logic: API keys with a role and
// optional resource prefixes, the admin token, and dashboard sessions.
//
// Secrets are 256 random bits, so a single SHA-256 is the right hash (a slow
// password hash buys nothing against a secret nobody can guess); only the
// hash is stored, and it is compared in constant time. Keys are cached in
// memory: checking a credential costs a hash and a map lookup, no database
// read, which keeps auth out of the grant path's cost.
//
// The HTTP layer consumes a Keyring; where keys are kept is a Store, so a
// cluster can keep them in its own store behind the same interface.
package auth

import (
	"context"
	"strings"
	"time"

	"github.com/fenceview/fenceview"
)

// Role is what a key may do.
type Role string

// The roles, each allowing more than the one before (guard and client are
// siblings: both fence, only a client locks, only a guard reports).
const (
	Viewer Role = "viewer" // every read, the event stream, the dashboard
	Client Role = "client" // viewer + acquire, renew, release, fence, RPC
	Guard  Role = "guard"  // viewer + fence, report decisions
	Admin  Role = "admin"  // everything
)

// Action is the kind of thing a request does.
type Action int

// The actions routes are classified by.
const (
	Read   Action = iota // GETs, the event stream, the dashboard
	Lock                 // acquire, renew, release, the RPC stream
	Fence                // present a token to the server's guard
	Report               // record decisions made by plugins
	Manage               // expire, reset, keys, recovery: admin only
)

// ParseRole checks a role name.
func ParseRole(s string) (Role, bool) {
	switch r := Role(s); r {
	case Viewer, Client, Guard, Admin:
		return r, true
	}
	return "", false
}

// Allows reports whether r may do a.
func (r Role) Allows(a Action) bool {
	switch a {
	case Read:
		return r == Viewer || r == Client || r == Guard || r == Admin
	case Lock:
		return r == Client || r == Admin
	case Fence:
		return r == Client || r == Guard || r == Admin
	case Report:
		return r == Guard || r == Admin
	}
	return r == Admin
}

// Key is what may be shown about a key: never its secret.
type Key struct {
	ID        string
	Name      string
	Role      Role
	Resources []string // id prefixes; empty: every resource
	CreatedAt time.Time
}

// Principal is who a request acts as.
type Principal struct {
	KeyID     string // "admin" for the admin token
	Name      string
	Role      Role
	Resources []string
	revoked   <-chan struct{} // closed when the key is revoked
	nothing   bool            // sees no resource at all (Anonymous)
	ended     <-chan struct{} // a session's: closed when it ends; nil for a bearer secret
	keyTag    string          // KeyTag's, made once with a key's principal
}

// KeyTag is "key:<id>": how the requests of a key are attributed and
// queued. A key's principal lives as long as the key, so it is built
// once rather than per request.
func (p *Principal) KeyTag() string {
	if p.keyTag != "" {
		return p.keyTag
	}
	return "key:" + p.KeyID
}

// Open is the principal of every request when auth is off (no admin
// token): it may do everything, and owns its locks by holder name alone.
var Open = &Principal{KeyID: "", Name: "auth off", Role: Admin}

// Anonymous is the principal of every request to a public route (the login
// form, static files, health, public keys), and of any code that looks for
// a principal where none was set: it may do nothing and sees no resource,
// so a handler that forgets to check shows nothing rather than everything.
// Its one prefix is one no resource id has (ids hold no control
// character), so a filter built from Resources, in memory or in SQL,
// matches nothing without a special case.
var Anonymous = &Principal{KeyID: "", Name: "anonymous", Role: "", Resources: []string{"\x01"}, nothing: true}

// Allows reports whether p may do a.
func (p *Principal) Allows(a Action) bool { return p.Role.Allows(a) }

// Sees reports whether p may act on, read or see resourceID.
func (p *Principal) Sees(resourceID string) bool {
	if p.nothing {
		return false
	}
	if len(p.Resources) == 0 {
		return true
	}
	for _, pre := range p.Resources {
		if strings.HasPrefix(resourceID, pre) {
			return true
		}
	}
	return false
}

// Unrestricted reports whether p sees every resource.
func (p *Principal) Unrestricted() bool { return !p.nothing && len(p.Resources) == 0 }

// Scope is what p may see, for the lock authority's readers: its prefixes,
// so a key limited to some resources walks only those; no filter at all
// when it sees everything, so the common case pays nothing.
func (p *Principal) Scope() fenceview.Scope {
	if p.Unrestricted() {
		return fenceview.Scope{}
	}
	return fenceview.Scope{Prefixes: p.Resources, Sees: p.Sees}
}

// SeesNothing reports whether p sees no resource at all (Anonymous): its
// empty Resources must then not be read as "every resource".
func (p *Principal) SeesNothing() bool { return p.nothing }

// Revoked is closed when p's key is revoked, or, for the admin token, when
// the token is replaced (Keyring.SetAdminToken); nil (never ready) for Open
// and Anonymous.
func (p *Principal) Revoked() <-chan struct{} { return p.revoked }

// Ended is closed when the dashboard session p came from ends: logout,
// expiry, or eviction. It is nil (never ready) for a bearer secret. A
// stream opened with a session watches both Ended and Revoked.
func (p *Principal) Ended() <-chan struct{} { return p.ended }

// Gone reports whether p's credential no longer holds: its key revoked or
// its session ended. It never blocks.
func (p *Principal) Gone() bool {
	select {
	case <-p.revoked:
		return true
	case <-p.ended:
		return true
	default:
		return false
	}
}

// Owner is the identity locks taken by p belong to, beside the holder name:
// "" when auth is off, so ownership is the holder alone: nobody is told apart.
func (p *Principal) Owner() string { return p.KeyID }

type ctxKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the principal in ctx, Anonymous when there is none:
// the HTTP layer sets one on every request (Open when auth is off), so a
// context without one is a mistake, and a mistake must see nothing.
func FromContext(ctx context.Context) *Principal {
	if p, ok := ctx.Value(ctxKey{}).(*Principal); ok && p != nil {
		return p
	}
	return Anonymous
}

// InContext reports whether ctx carries a principal.
func InContext(ctx context.Context) bool {
	p, ok := ctx.Value(ctxKey{}).(*Principal)
	return ok && p != nil
}
