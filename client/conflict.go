package client

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/fenceview/fenceview/internal/wire"
)

// Messages of contract v3's refusals (the "error" member).
const (
	msgLockHeld        = "lock held"
	msgLockDelay       = "lock delay"
	msgNoPermit        = "no permit free"
	msgPermitsMismatch = "permits mismatch"
	msgNotLeader       = "not leader"
)

// conflict maps a 409 answer about resource (a lock, a semaphore's name,
// an election) to its typed error; asked is the permits a semaphore
// acquire asked for. Refusals it does not know become an *APIError of
// kind other.
func conflict(raw []byte, resource string, asked int, other error) error {
	var b wire.Conflict
	if json.Unmarshal(raw, &b) != nil {
		return apiError(http.StatusConflict, raw, other)
	}
	switch {
	case b.Error == msgLockDelay:
		return &LockDelayError{Resource: resource, AvailableAt: time.Time(b.AvailableAt)}
	case b.Error == msgNoPermit:
		return &NoPermitError{Semaphore: resource, Permits: b.Permits}
	case b.Error == msgPermitsMismatch:
		return &PermitsMismatchError{Semaphore: resource, Permits: b.Permits, Asked: asked}
	case b.Error == msgNotLeader:
		return apiError(http.StatusConflict, raw, ErrNotLeader)
	case b.Error == msgLockHeld && b.Leader != nil:
		return &LeaderError{Election: resource, Leader: leaderOf(*b.Leader)}
	case b.Error == msgLockHeld && b.Held != nil:
		e := &LocksHeldError{}
		for _, h := range b.Held {
			e.Held = append(e.Held, HeldError{Resource: h.ResourceID, Holder: string(h.Holder), ExpiresAt: time.Time(h.ExpiresAt)})
		}
		return e
	case b.Error == msgLockHeld:
		return &HeldError{Resource: resource, Holder: b.Holder, ExpiresAt: time.Time(b.ExpiresAt)}
	}
	return apiError(http.StatusConflict, raw, other)
}

// conflictOf is an errFor of call and exchange mapping 409s by conflict.
func conflictOf(resource string, asked int, other error) func(int, []byte, http.Header) error {
	return func(status int, raw []byte, _ http.Header) error {
		if status != http.StatusConflict {
			return nil
		}
		return conflict(raw, resource, asked, other)
	}
}
