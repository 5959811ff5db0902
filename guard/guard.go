// Package guard is the resource side of fencing: the rule a protected resource
// applies to every write that carries a fencing token.
//
// A resource remembers the highest token it has accepted (its high-water mark)
// and refuses anything lower. Equal tokens are accepted, because one lock
// holder usually makes several writes under the same grant. The comparison
// and the update of the mark are one atomic step: a check followed by a
// separate write would reopen the very gap the token exists to close.
//
//	g := guard.New()
//	d, err := g.Check("inventory:42", token)
//	if err != nil { /* bad input: nothing changed */ }
//	if !d.Accepted { /* stale writer: refuse, report d.Required */ }
//
// The rule and the marks are package guard/ledger's, the one implementation
// of them: Guard is that ledger behind a mutex, with this package's
// Decision and the Verifier of signed mode. The WebAssembly guard
// (package wasm) runs the same ledger, built into guard.wasm.
package guard

import (
	"context"
	"sync"

	"github.com/fenceview/fenceview/guard/ledger"
)

// Reasons a token is refused. They are part of fenceview's public contract:
// they appear in HTTP bodies, the rejection history and the event stream.
const (
	// ReasonStale: the token is below the resource's high-water mark.
	ReasonStale = ledger.ReasonStale
	// ReasonForeignIssuer: the token names another issuer; tokens of
	// different issuers are not comparable, so it is never compared.
	ReasonForeignIssuer = "foreign-issuer"
	// ReasonScopeMismatch: the token was issued for another resource.
	ReasonScopeMismatch = "scope-mismatch"
	// ReasonUnissued: the token is above the last one the issuer ever
	// issued for the resource, so no honest holder can have it.
	ReasonUnissued = "unissued-token"
	// ReasonSuperseded: the token is below the last one issued for the
	// resource, and the fence was asked that only the current holder may
	// write (the server's fence in mode current). Required is then the
	// last token issued, not a mark.
	ReasonSuperseded = "superseded"
	// ReasonSharedToken: a write presented the token of a shared grant,
	// which the readers of a whole read phase hold: it may read, never
	// write. A signed guard tells by the signature; the server's fence by
	// its record of grants.
	ReasonSharedToken = ledger.ReasonSharedToken
)

// Mode is what a token's signature proves: the kind of grant a trusted
// key signed it for (Exclusive, Shared), or Unsigned.
type Mode = ledger.Mode

// The modes a signature proves.
const (
	Unsigned  = ledger.Unsigned
	Exclusive = ledger.Exclusive
	Shared    = ledger.Shared
)

// Decision is the outcome of presenting a token to a resource.
//
// Required is the high-water mark the token was compared with: for a refusal,
// the lowest token that would have been accepted.
type Decision struct {
	Accepted  bool   `json:"accepted"`
	Reason    string `json:"reason,omitempty"`
	Presented int64  `json:"presented"`
	Required  int64  `json:"required"`
}

// Evaluate applies the fencing rule to a high-water mark and a presented
// token: accept token >= highWater, refuse token < highWater. It is pure;
// callers that keep the mark must record an accepted token in the same atomic
// step (as Guard does, and as the server does inside its transaction).
func Evaluate(highWater, presented int64) Decision {
	return decision(ledger.Evaluate(highWater, presented), presented)
}

// decision is a ledger's result for a presented token.
func decision(r ledger.Result, presented int64) Decision {
	return Decision{Accepted: r.Accepted, Reason: r.Reason, Presented: presented, Required: r.Required}
}

// decided is a ledger's answer as Guard gives it: no decision for an error.
func decided(r ledger.Result, presented int64, err error) (Decision, error) {
	if err != nil {
		return Decision{}, err
	}
	return decision(r, presented), nil
}

// Handle names one resource of a Guard by a small integer. Handles start
// at 1; the zero Handle names nothing.
type Handle = ledger.Handle

// ErrUnknownHandle is returned for a Handle a Guard never gave out.
var ErrUnknownHandle = ledger.ErrUnknownHandle

// Guard keeps high-water marks in memory, one per resource. It is safe for
// concurrent use: it is a ledger.Ledger behind a mutex. The zero Guard is
// empty and ready to use; New says so at the call site.
//
// Resources can also be named by Handle, so a hot path can check tokens
// without hashing the id on every call. A handle, once given, names its
// resource for the life of the Guard, so a guard only grows.
type Guard struct {
	mu sync.Mutex
	l  ledger.Ledger
	v  *Verifier // the keys of signed mode; nil outside it
}

// New returns an empty guard.
func New() *Guard { return &Guard{} }

// Check presents token for resourceID and, when accepted, raises the
// resource's high-water mark to it, atomically. Invalid input is an error
// and changes nothing.
func (g *Guard) Check(resourceID string, token int64) (Decision, error) {
	g.mu.Lock()
	r, err := g.l.Check(resourceID, token)
	g.mu.Unlock()
	return decided(r, token, err)
}

// CheckToken checks a token envelope: a token of another issuer or another
// scope is refused with its own reason and never compared with the mark.
// An empty Issuer or Scope in t is not checked. issuer is the issuer this
// guard trusts; empty trusts any.
func (g *Guard) CheckToken(issuer, resourceID string, t Token) (Decision, error) {
	if reason := t.Mismatch(issuer, resourceID); reason != "" {
		if err := validate(resourceID, t.Token); err != nil {
			return Decision{}, err
		}
		hwm, _ := g.HighWater(resourceID)
		return Decision{Accepted: false, Reason: reason, Presented: t.Token, Required: hwm}, nil
	}
	return g.CheckSigned(resourceID, t.Token, t.Signature)
}

// Handle returns the handle of resourceID, giving it one on first use.
// Resolving a handle does not give the resource a high-water mark.
func (g *Guard) Handle(resourceID string) (Handle, error) {
	return locked(&g.mu, g.l.Handle, resourceID)
}

// CheckHandle is Check for the resource h names.
func (g *Guard) CheckHandle(h Handle, token int64) (Decision, error) {
	g.mu.Lock()
	r, err := g.l.CheckHandle(h, token)
	g.mu.Unlock()
	return decided(r, token, err)
}

// HighWater returns the resource's high-water mark, 0 when it has none.
func (g *Guard) HighWater(resourceID string) (int64, error) {
	return locked(&g.mu, g.l.HighWater, resourceID)
}

// HighWaterHandle is HighWater for the resource h names.
func (g *Guard) HighWaterHandle(h Handle) (int64, error) {
	return locked(&g.mu, g.l.HighWaterHandle, h)
}

// Seed raises the resource's high-water mark to at least token without
// making a decision, to restore state after a restart. It never lowers a
// mark. It returns the mark after seeding.
func (g *Guard) Seed(resourceID string, token int64) (int64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.l.Seed(resourceID, token)
}

// ResourceID returns the resource h names.
func (g *Guard) ResourceID(h Handle) (string, error) { return locked(&g.mu, g.l.ResourceID, h) }

// Marks returns a copy of every high-water mark, for persisting or
// reporting. Resources that have a handle but no mark yet are left out.
func (g *Guard) Marks() map[string]int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.l.Marks()
}

// locked is f(a) under mu: a read or a handle of the ledger, one at a time
// with the checks.
func locked[A, R any](mu *sync.Mutex, f func(A) (R, error), a A) (R, error) {
	mu.Lock()
	defer mu.Unlock()
	return f(a)
}

// Checker applies the fencing rule and records an accepted token, in one
// atomic step: what a guarded resource keeps its marks in. *Guard (in
// memory, one process) and *sqlguard.Marks (durable, shared) implement it;
// the HTTP middleware (httpguard) and the outgoing-call helper (callguard)
// take one.
type Checker interface {
	Check(resourceID string, token int64) (Decision, error)
}

// ContextChecker is a Checker that takes a context (*sqlguard.Marks);
// CheckWith prefers it.
type ContextChecker interface {
	CheckContext(ctx context.Context, resourceID string, token int64) (Decision, error)
}

// CheckWith checks token through c, with ctx when c takes one.
func CheckWith(ctx context.Context, c Checker, resourceID string, token int64) (Decision, error) {
	if cc, ok := c.(ContextChecker); ok {
		return cc.CheckContext(ctx, resourceID, token)
	}
	return c.Check(resourceID, token)
}
