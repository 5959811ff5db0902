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
)

// RefusalError is a fencing token refused by a guard, here the server's
// (Client.Fence). It is guard.RefusalError, so one errors.As matches
// refusals from the server, the HTTP guard's transport and the SQL guard.
type RefusalError = guard.RefusalError

// StaleTokenError is the former name of RefusalError.
//
// Deprecated: use RefusalError.
type StaleTokenError = guard.RefusalError

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
