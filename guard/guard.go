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
// The package uses only the standard library and builds for GOOS=wasip1, so
// the WebAssembly guard runs exactly this code.
package guard

import (
	"sync"
)

// Reasons a token is refused. They are part of fenceview's public contract:
// they appear in HTTP bodies, the rejection history and the event stream.
const (
	// ReasonStale: the token is below the resource's high-water mark.
	ReasonStale = "stale-token"
	// ReasonForeignIssuer: the token names another issuer; tokens of
	// different issuers are not comparable, so it is never compared.
	ReasonForeignIssuer = "foreign-issuer"
	// ReasonScopeMismatch: the token was issued for another resource.
	ReasonScopeMismatch = "scope-mismatch"
	// ReasonUnissued: the token is above the last one the issuer ever
	// issued for the resource, so no honest holder can have it.
	ReasonUnissued = "unissued-token"
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
	if presented < highWater {
		return Decision{Accepted: false, Reason: ReasonStale, Presented: presented, Required: highWater}
	}
	return Decision{Accepted: true, Presented: presented, Required: highWater}
}

// Guard keeps high-water marks in memory, one per resource. It is safe for
// concurrent use; its zero value is not, use New.
type Guard struct {
	mu     sync.Mutex
	marks  map[string]int64
	signed *signedMode // nil unless in signed mode (NewSigned)
}

// New returns an empty guard.
func New() *Guard {
	return &Guard{marks: make(map[string]int64)}
}

// Check presents token for resourceID and, when accepted, raises the
// resource's high-water mark to it, atomically. Invalid input is an error
// and changes nothing.
func (g *Guard) Check(resourceID string, token int64) (Decision, error) {
	if err := ValidateResourceID(resourceID); err != nil {
		return Decision{}, err
	}
	if err := ValidateToken(token); err != nil {
		return Decision{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.signed != nil { // a bare number proves nothing here
		return badSignature(token, g.marks[resourceID]), nil
	}
	return g.record(resourceID, token), nil
}

// record applies the rule to a valid token; g.mu is held.
func (g *Guard) record(resourceID string, token int64) Decision {
	d := Evaluate(g.marks[resourceID], token)
	if d.Accepted {
		g.marks[resourceID] = token
	}
	return d
}

// CheckToken checks a token envelope: a token of another issuer or another
// scope is refused with its own reason and never compared with the mark.
// An empty Issuer or Scope in t is not checked. issuer is the issuer this
// guard trusts; empty trusts any. In signed mode t.Signature must verify
// (see CheckSigned).
func (g *Guard) CheckToken(issuer, resourceID string, t Token) (Decision, error) {
	if err := ValidateResourceID(resourceID); err != nil {
		return Decision{}, err
	}
	if err := ValidateToken(t.Token); err != nil {
		return Decision{}, err
	}
	if reason := t.Mismatch(issuer, resourceID); reason != "" {
		g.mu.Lock()
		hwm := g.marks[resourceID]
		g.mu.Unlock()
		return Decision{Accepted: false, Reason: reason, Presented: t.Token, Required: hwm}, nil
	}
	return g.CheckSigned(resourceID, t.Token, t.Signature)
}

// HighWater returns the resource's high-water mark, 0 when it has none.
func (g *Guard) HighWater(resourceID string) (int64, error) {
	if err := ValidateResourceID(resourceID); err != nil {
		return 0, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.marks[resourceID], nil
}

// Seed raises the resource's high-water mark to at least token without
// making a decision, to restore state after a restart. It never lowers a
// mark. It returns the mark after seeding.
func (g *Guard) Seed(resourceID string, token int64) (int64, error) {
	if err := ValidateResourceID(resourceID); err != nil {
		return 0, err
	}
	if err := ValidateToken(token); err != nil {
		return 0, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if token > g.marks[resourceID] {
		g.marks[resourceID] = token
	}
	return g.marks[resourceID], nil
}

// Marks returns a copy of every high-water mark, for persisting or reporting.
func (g *Guard) Marks() map[string]int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]int64, len(g.marks))
	for k, v := range g.marks {
		out[k] = v
	}
	return out
}
