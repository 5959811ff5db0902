package client

import (
	"errors"
	"fmt"
	"time"

	"github.com/fenceview/fenceview/guard"
)

// Errors to match with errors.Is. Refusals by the server come back as
// *HeldError, *APIError or *RefusalError values that match these.
var (
	// ErrHeld: the lock is held by another holder (see HeldError).
	ErrHeld = errors.New("fenceview: lock held")
	// ErrNotOwner: release refused, this holder does not hold the lock
	// (never did, or its lease ran out, or it was force-expired).
	ErrNotOwner = errors.New("fenceview: not lock owner")
	// ErrNotHeld: renew refused, the lease is no longer this holder's.
	ErrNotHeld = errors.New("fenceview: lock not held")
	// ErrInvalid: bad input, refused by the client before sending or by the
	// server with 400 or 413. Nothing changed.
	ErrInvalid = errors.New("fenceview: invalid request")
	// ErrUnauthorized: an admin call without the right admin token.
	ErrUnauthorized = errors.New("fenceview: unauthorized")
	// ErrClosed: the Client was closed (see Client.Close); nothing was
	// sent. It is also the cause of the Context of a lock held at Close.
	ErrClosed = errors.New("fenceview: client closed")
	// ErrNotFound: the server knows no such thing.
	ErrNotFound = errors.New("fenceview: not found")
	// ErrLeaseLost is the cause of a Mutex's context when its lease was
	// lost: a renewal was refused, the server stayed unreachable until the
	// lease ran out, or a fixed lease (TryLock with a lease) ran out. The
	// error that is the cause also wraps what happened.
	ErrLeaseLost = errors.New("fenceview: lease lost")
	// ErrUnlocked is the cause of a Mutex's context after the last Unlock.
	ErrUnlocked = errors.New("fenceview: unlocked")

	// Contract v3's primitives:

	// ErrLockDelay: the lock's last lease ran out without a release and
	// its lock-delay still runs (see LockDelayError).
	ErrLockDelay = errors.New("fenceview: lock delay")
	// ErrNoPermit: every slot of the semaphore is taken (see NoPermitError).
	ErrNoPermit = errors.New("fenceview: no permit free")
	// ErrPermitsMismatch: the semaphore has another number of permits than
	// asked (see PermitsMismatchError).
	ErrPermitsMismatch = errors.New("fenceview: permits mismatch")
	// ErrNotLeader: a proclaim or a renewal of leadership by a candidate
	// that does not lead the election (any longer).
	ErrNotLeader = errors.New("fenceview: not leader")
	// ErrNoLeader: nobody leads the election (Election.Leader).
	ErrNoLeader = errors.New("fenceview: election has no leader")
	// ErrResigned is the cause of an Election's context after Resign.
	ErrResigned = errors.New("fenceview: resigned")
)

// RefusalError is a fencing token refused by a guard, here the server's
// (Client.Fence). It is guard.RefusalError, so one errors.As matches
// refusals from the server, the HTTP guard's transport and the SQL guard.
type RefusalError = guard.RefusalError

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

// APIError is an error response of the server. It matches the sentinel of
// its kind with errors.Is: ErrInvalid (400, 413), ErrUnauthorized (401),
// ErrNotFound (404), ErrNotOwner and ErrNotHeld (409 from release and renew).
type APIError struct {
	StatusCode int
	Message    string // the server's "error" field
	kind       error
}

func (e *APIError) Error() string {
	return fmt.Sprintf("fenceview: server said %d: %s", e.StatusCode, e.Message)
}

// Is matches the sentinel for the kind of refusal.
func (e *APIError) Is(target error) bool { return e.kind != nil && target == e.kind }

// Temporary reports whether retrying the same request may succeed: the
// server was unavailable or failed internally.
func (e *APIError) Temporary() bool { return e.StatusCode >= 500 }

func invalid(err error) error { return fmt.Errorf("%w: %w", ErrInvalid, err) }

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
