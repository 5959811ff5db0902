package client

import (
	"errors"
	"fmt"
	"time"

	"github.com/fenceview/fenceview/guard"
)

// Errors to match with errors.Is. Every refusal of the server is an
// *APIError (errors.As) that matches the sentinel of its code, and the
// sentinel of the code's family where it has one (ErrInvalid,
// ErrUnauthorized, ErrTokenRefused); refusals with more to say also
// unwrap to their own type (*HeldError, *LockDelayError, *RefusalError,
// ...). The code, never the English message, decides: see codeErrors.
var (
	// ErrHeld: the lock is held by another holder (code lock-held; see
	// HeldError, LocksHeldError, LeaderError).
	ErrHeld = errors.New("fenceview: lock held")
	// ErrLockHeld is ErrHeld, named after its code.
	ErrLockHeld = ErrHeld
	// ErrLockDelay: the lock's last lease ran out without a release and
	// its lock-delay still runs (code lock-delay; see LockDelayError).
	ErrLockDelay = errors.New("fenceview: lock delay")
	// ErrLeaseExpired: a renew or release by the holder whose lease on the
	// lock ran out, or was force-expired, and was not released since
	// (code lease-expired; APIError.ExpiredAt says when).
	ErrLeaseExpired = errors.New("fenceview: lease expired")
	// ErrNotOwner: a renew or release of a lock another holder holds
	// (code not-owner).
	ErrNotOwner = errors.New("fenceview: not lock owner")
	// ErrNotHeld: a renew or release of a free lock (code not-held).
	ErrNotHeld = errors.New("fenceview: lock not held")
	// ErrNoPermit: every slot of the semaphore is taken (code no-permit;
	// see NoPermitError).
	ErrNoPermit = errors.New("fenceview: no permit free")
	// ErrPermitsMismatch: the semaphore has another number of permits than
	// asked (code permits-mismatch; see PermitsMismatchError).
	ErrPermitsMismatch = errors.New("fenceview: permits mismatch")
	// ErrNotLeader: a proclaim, resign or renewal of leadership by a
	// candidate that does not lead the election (any longer) (code
	// not-leader).
	ErrNotLeader = errors.New("fenceview: not leader")

	// ErrTokenRefused: a fencing token refused by the server's guard, for
	// any reason (see RefusalError); each reason has its sentinel below.
	ErrTokenRefused = errors.New("fenceview: token refused")
	// ErrStaleToken: the token is below the resource's high-water mark.
	ErrStaleToken = errors.New("fenceview: stale token")
	// ErrSuperseded: in the fence's mode current, a token below the last
	// one issued for the resource.
	ErrSuperseded = errors.New("fenceview: token superseded")
	// ErrBadSignature: the token's signature does not verify.
	ErrBadSignature = errors.New("fenceview: bad token signature")
	// ErrUnissuedToken: a token the server never issued.
	ErrUnissuedToken = errors.New("fenceview: token never issued")
	// ErrForeignIssuer: a token of another issuer.
	ErrForeignIssuer = errors.New("fenceview: token of another issuer")
	// ErrScopeMismatch: a token of another scope.
	ErrScopeMismatch = errors.New("fenceview: token of another scope")
	// ErrSharedToken: a write with a read phase's token (RWMutex.RLock's),
	// which may read, never write.
	ErrSharedToken = errors.New("fenceview: a shared token may not write")

	// ErrInvalid: bad input, refused by the client before sending or by
	// the server (codes invalid-request, unknown-field, invalid-token,
	// too-large, method-not-allowed). Nothing changed.
	ErrInvalid = errors.New("fenceview: invalid input")
	// ErrInvalidRequest: malformed JSON, a field of the wrong type or out
	// of bounds (code invalid-request; APIError.Field names it).
	ErrInvalidRequest = errors.New("fenceview: invalid request")
	// ErrUnknownField: a body field the operation does not define (code
	// unknown-field; APIError.Field names it).
	ErrUnknownField = errors.New("fenceview: unknown field")
	// ErrInvalidToken: a missing or ill-formed fencing token (code
	// invalid-token).
	ErrInvalidToken = errors.New("fenceview: invalid token")
	// ErrTooLarge: a body or batch over its limit (code too-large).
	ErrTooLarge = errors.New("fenceview: request too large")
	// ErrMethodNotAllowed: the route has no such method (code
	// method-not-allowed).
	ErrMethodNotAllowed = errors.New("fenceview: method not allowed")

	// ErrUnauthorized: the credential is missing, unknown or revoked, or
	// does not allow the call (codes unauthenticated, forbidden).
	ErrUnauthorized = errors.New("fenceview: unauthorized")
	// ErrUnauthenticated: credential missing, unknown or revoked (code
	// unauthenticated).
	ErrUnauthenticated = errors.New("fenceview: unauthenticated")
	// ErrForbidden: the key's role or prefixes do not allow the call
	// (code forbidden).
	ErrForbidden = errors.New("fenceview: forbidden")
	// ErrNotFound: the server knows no such thing (code not-found).
	ErrNotFound = errors.New("fenceview: not found")

	// ErrExhausted: the resource's tokens are exhausted; an admin
	// recovers it (code exhausted).
	ErrExhausted = errors.New("fenceview: tokens exhausted")
	// ErrConflict: an admin change the server's state refuses (a signing
	// key in use, keys with auth off, recovering a held lock) (code
	// conflict).
	ErrConflict = errors.New("fenceview: change refused")

	// ErrOverloaded: the server shed the call under load; nothing changed
	// (code overloaded; APIError.RetryAfter says when to try again). The
	// client retries these itself within the call's context first.
	ErrOverloaded = errors.New("fenceview: server overloaded")
	// ErrLimit: a server limit was reached (resources, waiters,
	// connections); nothing changed (code limit).
	ErrLimit = errors.New("fenceview: server limit reached")
	// ErrUnavailable: no leader, or the durable record could not be
	// written (code unavailable).
	ErrUnavailable = errors.New("fenceview: server unavailable")
	// ErrInternal: the server failed (code internal).
	ErrInternal = errors.New("fenceview: server internal error")

	// ErrClosed: the Client was closed (see Client.Close); nothing was
	// sent. It is also the cause of the Context of a lock held at Close.
	ErrClosed = errors.New("fenceview: client closed")
	// ErrLeaseLost is the cause of a Mutex's context when its lease was
	// lost: a renewal was refused, the server stayed unreachable until the
	// lease ran out, or a fixed lease (TryLock with a lease) ran out. The
	// error that is the cause also wraps what happened.
	ErrLeaseLost = errors.New("fenceview: lease lost")
	// ErrUnlocked is the cause of a Mutex's context after the last Unlock.
	ErrUnlocked = errors.New("fenceview: unlocked")
	// ErrNoLeader: nobody leads the election (Election.Leader).
	ErrNoLeader = errors.New("fenceview: election has no leader")
	// ErrResigned is the cause of an Election's context after Resign.
	ErrResigned = errors.New("fenceview: resigned")
)

// codeErrors maps each refusal code of the server to its sentinel.
var codeErrors = map[string]error{
	"invalid-request":       ErrInvalidRequest,
	"unknown-field":         ErrUnknownField,
	"invalid-token":         ErrInvalidToken,
	"too-large":             ErrTooLarge,
	"method-not-allowed":    ErrMethodNotAllowed,
	"unauthenticated":       ErrUnauthenticated,
	"forbidden":             ErrForbidden,
	"not-found":             ErrNotFound,
	"lock-held":             ErrLockHeld,
	"lock-delay":            ErrLockDelay,
	"lease-expired":         ErrLeaseExpired,
	"not-owner":             ErrNotOwner,
	"not-held":              ErrNotHeld,
	"no-permit":             ErrNoPermit,
	"permits-mismatch":      ErrPermitsMismatch,
	"not-leader":            ErrNotLeader,
	guard.ReasonStale:       ErrStaleToken,
	"superseded":            ErrSuperseded,
	"bad-signature":         ErrBadSignature,
	"unissued-token":        ErrUnissuedToken,
	"foreign-issuer":        ErrForeignIssuer,
	"scope-mismatch":        ErrScopeMismatch,
	guard.ReasonSharedToken: ErrSharedToken,
	"exhausted":             ErrExhausted,
	"conflict":              ErrConflict,
	"overloaded":            ErrOverloaded,
	"limit":                 ErrLimit,
	"unavailable":           ErrUnavailable,
	"internal":              ErrInternal,
}

// codeFamily is the sentinel a code's sentinel belongs to, if any.
func codeFamily(code string) error {
	switch code {
	case "invalid-request", "unknown-field", "invalid-token", "too-large", "method-not-allowed":
		return ErrInvalid
	case "unauthenticated", "forbidden":
		return ErrUnauthorized
	case guard.ReasonStale, "superseded", "bad-signature", "unissued-token", "foreign-issuer", "scope-mismatch", guard.ReasonSharedToken:
		return ErrTokenRefused
	}
	return nil
}

// statusCodes is the code a status implies, for servers that send none
// (and codes this client does not know).
var statusCodes = map[int]string{
	400: "invalid-request",
	401: "unauthenticated",
	403: "forbidden",
	404: "not-found",
	405: "method-not-allowed",
	413: "too-large",
	429: "overloaded",
	500: "internal",
	503: "unavailable",
}

// RefusalError is a fencing token refused by a guard, here the server's
// (Client.Fence). It is guard.RefusalError, so one errors.As matches
// refusals from the server, the HTTP guard's transport and the SQL guard.
type RefusalError = guard.RefusalError

// APIError is an error answer of the server, over JSON or the RPC stream
// alike. It matches the sentinel of its Code with errors.Is (see
// codeErrors), and unwraps to the refusal's own type when it has one
// (*HeldError, *LocksHeldError, *LeaderError, *LockDelayError,
// *NoPermitError, *PermitsMismatchError, *RefusalError).
type APIError struct {
	StatusCode int
	// Code is the server's refusal code ("lock-held", "lease-expired",
	// ...). From a server that sends none, it is the one the status (and,
	// for a 409, the operation and the answer's fields) implies.
	Code    string
	Message string // the server's "error": for people, not to branch on
	Field   string // the body field at fault (invalid-request, unknown-field)

	Holder      string    // lock-held: who holds it
	ExpiresAt   time.Time // lock-held: when that lease ends unless renewed
	AvailableAt time.Time // lock-delay: when the lock may be taken
	ExpiredAt   time.Time // lease-expired: when the lease ran out
	Permits     int       // no-permit, permits-mismatch: the semaphore's permits
	Required    int64     // a fence refusal: the token the resource requires
	// RetryAfter is when to try again (overloaded, unavailable): the
	// answer's retryAfterMs, else its Retry-After header; 0 when it said
	// nothing.
	RetryAfter time.Duration

	detail error
}

func (e *APIError) Error() string {
	if e.detail != nil {
		return e.detail.Error()
	}
	return fmt.Sprintf("fenceview: server said %d %s: %s", e.StatusCode, e.Code, e.Message)
}

// Is matches the sentinel of the code and of its family.
func (e *APIError) Is(target error) bool {
	s, ok := codeErrors[e.Code]
	if !ok {
		s = codeErrors[statusCodes[e.StatusCode]]
	}
	return target == s || (target != nil && target == codeFamily(e.Code))
}

// Unwrap returns the refusal's own typed error, if it has one.
func (e *APIError) Unwrap() error { return e.detail }

// Temporary reports whether retrying the same request may succeed: the
// server shed it (429) or was unavailable or failed (5xx).
func (e *APIError) Temporary() bool {
	return e.StatusCode >= 500 || e.StatusCode == 429
}

func invalid(err error) error { return fmt.Errorf("%w: %w", ErrInvalid, err) }

// HeldError is an acquire refused because another holder has the lock.
// errors.Is(err, ErrHeld) is true for it.
type HeldError struct {
	Resource  string
	Holder    string    // who holds it
	ExpiresAt time.Time // when that lease ends unless renewed
}

func (e *HeldError) Error() string {
	if e.Holder == "" {
		return fmt.Sprintf("fenceview: lock %q held", e.Resource)
	}
	return fmt.Sprintf("fenceview: lock %q held by %q until %s", e.Resource, e.Holder, e.ExpiresAt.Format(time.RFC3339Nano))
}

// Is makes errors.Is(err, ErrHeld) true.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// LockDelayError is an acquire refused because the lock is in its
// lock-delay: its last lease, granted with one, ran out without a release,
// and nobody may take it before AvailableAt. errors.Is(err, ErrLockDelay)
// is true for it.
type LockDelayError struct {
	Resource    string
	AvailableAt time.Time
}

func (e *LockDelayError) Error() string {
	return fmt.Sprintf("fenceview: lock %q in its lock-delay until %s", e.Resource, e.AvailableAt.Format(time.RFC3339Nano))
}

// Is makes errors.Is(err, ErrLockDelay) true.
func (e *LockDelayError) Is(target error) bool { return target == ErrLockDelay }

// LocksHeldError is a multi-lock refused because some of its locks are
// held by others; nothing was granted. errors.Is(err, ErrHeld) is true.
type LocksHeldError struct {
	Held []HeldError // the locks held by others, as the server listed them
}

func (e *LocksHeldError) Error() string {
	if len(e.Held) == 0 {
		return "fenceview: locks held"
	}
	s := fmt.Sprintf("fenceview: %d of the locks held: %q by %q", len(e.Held), e.Held[0].Resource, e.Held[0].Holder)
	if len(e.Held) > 1 {
		s += ", ..."
	}
	return s
}

// Is makes errors.Is(err, ErrHeld) true.
func (e *LocksHeldError) Is(target error) bool { return target == ErrHeld }

// NoPermitError is a semaphore acquire refused because all Permits slots
// are taken. errors.Is(err, ErrNoPermit) is true for it.
type NoPermitError struct {
	Semaphore string
	Permits   int
}

func (e *NoPermitError) Error() string {
	return fmt.Sprintf("fenceview: no permit of semaphore %q free (%d permits)", e.Semaphore, e.Permits)
}

// Is makes errors.Is(err, ErrNoPermit) true.
func (e *NoPermitError) Is(target error) bool { return target == ErrNoPermit }

// PermitsMismatchError is a semaphore acquire asking for another number
// of permits than the semaphore has (Permits, fixed by its first acquire
// or an admin). errors.Is(err, ErrPermitsMismatch) is true for it.
type PermitsMismatchError struct {
	Semaphore string
	Permits   int // the semaphore's
	Asked     int
}

func (e *PermitsMismatchError) Error() string {
	return fmt.Sprintf("fenceview: semaphore %q has %d permits, not %d", e.Semaphore, e.Permits, e.Asked)
}

// Is makes errors.Is(err, ErrPermitsMismatch) true.
func (e *PermitsMismatchError) Is(target error) bool { return target == ErrPermitsMismatch }

// LeaderError is a campaign that ended while another candidate leads.
// errors.Is(err, ErrHeld) is true for it, as for any lock held.
type LeaderError struct {
	Election string
	Leader   Leader
}

func (e *LeaderError) Error() string {
	return fmt.Sprintf("fenceview: election %q led by %q (term %d)", e.Election, e.Leader.Candidate, e.Leader.Term)
}

// Is makes errors.Is(err, ErrHeld) true.
func (e *LeaderError) Is(target error) bool { return target == ErrHeld }
