package wire

import "time"

// The bodies of the primitives (semaphores, multi-locks,
// elections, each request's lock-delay) and their refusals. A request
// body is the server's reading of every route that shares it: pointers
// and Ints tell an absent field from a zero one, and a client sends only
// what it sets. An answer that was a map keeps the map's (sorted) key
// order in its fields, so its bytes are what they were.

// SemaphoreRequest is the body of a semaphore's acquire and release.
type SemaphoreRequest struct {
	Holder      *string `json:"holder,omitempty"`
	Permits     Int     `json:"permits,omitzero"`
	LeaseMs     Int     `json:"leaseMs,omitzero"`
	WaitMs      Int     `json:"waitMs,omitzero"`
	LockDelayMs Int     `json:"lockDelayMs,omitzero"`
	Slot        Int     `json:"slot,omitzero"` // of a release
}

// PermitsRequest is the body that changes a semaphore's permits.
type PermitsRequest struct {
	Permits Int `json:"permits,omitzero"`
}

// LockAllRequest is the body of a multi-lock's acquire-all and
// release-all.
type LockAllRequest struct {
	Resources   *[]string `json:"resources,omitempty"`
	Holder      *string   `json:"holder,omitempty"`
	LeaseMs     Int       `json:"leaseMs,omitzero"`
	WaitMs      Int       `json:"waitMs,omitzero"`
	LockDelayMs Int       `json:"lockDelayMs,omitzero"`
}

// ElectionRequest is the body of an election's campaign, proclaim, resign
// and renew.
type ElectionRequest struct {
	Candidate *string `json:"candidate,omitempty"`
	Value     *string `json:"value,omitempty"`
	LeaseMs   Int     `json:"leaseMs,omitzero"`
	WaitMs    Int     `json:"waitMs,omitzero"`
}

// Wait is how long the request may wait for its locks (0 when it may not).
func (r SemaphoreRequest) Wait() time.Duration { return millis(r.WaitMs) }

// Wait is how long the request may wait for its locks.
func (r LockAllRequest) Wait() time.Duration { return millis(r.WaitMs) }

// Wait is how long the campaign may wait for the election's lock.
func (r ElectionRequest) Wait() time.Duration { return millis(r.WaitMs) }

func millis(n Int) time.Duration { return time.Duration(n.Value) * time.Millisecond }

// IntSet is v, Set even when 0: a field a client always sends.
func IntSet(v int64) Int { return Int{Set: true, Value: v} }

// PermitGrant is the grant of a semaphore's slot: a lock grant of the
// slot's id plus the semaphore and the slot's number.
type PermitGrant struct {
	Grant
	Semaphore string `json:"semaphore"`
	Slot      int    `json:"slot"`
}

// SlotReleased answers a release of a semaphore's slot: a lock's release
// answer plus the semaphore and the slot.
type SlotReleased struct {
	ResourceID string `json:"resourceId"`
	HoldCount  int    `json:"holdCount"`
	Released   bool   `json:"released"`
	Semaphore  string `json:"semaphore"`
	Slot       int    `json:"slot"`
}

// Semaphore is a semaphore's state (GET /v1/semaphores/{name}).
type Semaphore struct {
	Name    string `json:"name"`
	Permits int    `json:"permits"`
	Held    []Slot `json:"held"`
	Free    int    `json:"free"`
	Waiters int    `json:"waiters"`
}

// Slot is one held slot of a semaphore.
type Slot struct {
	Slot       int    `json:"slot"`
	ResourceID string `json:"resourceId"`
	Holder     string `json:"holder"`
	Token      int64  `json:"token"`
	ExpiresAt  Time   `json:"expiresAt"`
}

// Grants answers an acquire-all: a grant of every lock, in the order
// asked.
type Grants struct {
	Grants []Grant `json:"grants"`
}

// ReleasedAll answers a release-all (fields in a map's order).
type ReleasedAll struct {
	NotHeld  []string `json:"notHeld"`
	Released []string `json:"released"`
}

// Leader is an election's leader; Term is the election lock's token.
type Leader struct {
	Candidate string `json:"candidate"`
	Value     string `json:"value"`
	Term      int64  `json:"term"`
	Since     Time   `json:"since"`
	ExpiresAt Time   `json:"expiresAt"`
}

// Elected answers a campaign and a leader's renewal: the leader and its
// grant's token envelope, whose token is the term.
type Elected struct {
	Name    string  `json:"name"`
	Leader  Leader  `json:"leader"`
	Fencing Fencing `json:"fencing"`
}

// Election answers GET /v1/elections/{name} (Leader null when nobody
// leads) and a proclaim (fields in a map's order).
type Election struct {
	Leader *Leader `json:"leader"`
	Name   string  `json:"name"`
}

// Resigned answers a resign.
type Resigned struct {
	Name     string `json:"name"`
	Resigned bool   `json:"resigned"`
}

// The RPC stream's requests of the primitives carry the fields of the
// JSON API's bodies (and the path's name as Name).

// SemaphoreBody is the semaphore body of an acquire or release request.
func (req *Request) SemaphoreBody() SemaphoreRequest {
	return SemaphoreRequest{Holder: req.Holder, Permits: req.Permits, LeaseMs: req.LeaseMs, WaitMs: req.WaitMs, LockDelayMs: req.LockDelayMs, Slot: req.Slot}
}

// PermitsBody is the body of a semaphore-permits request.
func (req *Request) PermitsBody() PermitsRequest { return PermitsRequest{Permits: req.Permits} }

// LockAllBody is the body of an acquire-all or release-all request.
func (req *Request) LockAllBody() LockAllRequest {
	return LockAllRequest{Resources: req.Resources, Holder: req.Holder, LeaseMs: req.LeaseMs, WaitMs: req.WaitMs, LockDelayMs: req.LockDelayMs}
}

// ElectionBody is the body of an election's request.
func (req *Request) ElectionBody() ElectionRequest {
	return ElectionRequest{Candidate: req.Candidate, Value: req.Value, LeaseMs: req.LeaseMs, WaitMs: req.WaitMs}
}

// Conflict is every member a 409 of the lock routes may carry (the
// issuer's refusals: a lock held, a lock-delay, no permit free or a
// permits mismatch, a campaign's leader); Code says which refusal it is.
// A client reads it; the server writes each refusal's own fields.
type Conflict struct {
	Error       string     `json:"error"`
	Code        string     `json:"code"`
	DocURL      string     `json:"docUrl,omitempty"`
	Holder      string     `json:"holder,omitempty"`
	ExpiresAt   Time       `json:"expiresAt,omitzero"`
	AvailableAt Time       `json:"availableAt,omitzero"`
	Permits     int        `json:"permits,omitempty"`
	Held        []HeldLock `json:"held,omitempty"`
	Leader      *Leader    `json:"leader,omitempty"`
}

// HeldLock is one lock of a multi-lock's refusal: held by another holder
// until ExpiresAt, or free (Holder null) in its lock-delay until
// AvailableAt.
type HeldLock struct {
	ResourceID  string     `json:"resourceId"`
	Holder      NullString `json:"holder"`
	ExpiresAt   Time       `json:"expiresAt,omitzero"`
	AvailableAt Time       `json:"availableAt,omitzero"`
}
