package issuer

import (
	"context"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
)

// Recover brings a poisoned or exhausted resource back into service: its
// token counter becomes to (the next grant takes to+1) and the server's
// own high-water mark comes down to at most to. It clears the counter
// alarm and is recorded as a recover event carrying the mark and counter
// it replaced.
//
// This is the one call that can move a mark or a counter down, so it is
// admin-only and explicit: to should be at least the highest token this
// server really issued that may still be in use (the history's grant
// events say which). A live lease whose token is above to is refused
// (expire it first), so no token of a live holder is ever issued again.
// Guards elsewhere that accepted the poisoned token keep their own marks
// and must be reseeded by their operators.
func (s *Service) Recover(ctx context.Context, resourceID string, to int64) (fenceview.Resource, error) {
	if err := guard.ValidateResourceID(resourceID); err != nil {
		return fenceview.Resource{}, invalid(err)
	}
	if to < 0 || to >= fenceview.MaxIssued {
		return fenceview.Resource{}, fenceview.Errorf(fenceview.EINVALID, "token must be an integer from 0 to %d", fenceview.MaxIssued-1)
	}
	if err := s.lockForChange(); err != nil {
		return fenceview.Resource{}, err
	}
	if _, ok := s.resources[resourceID]; !ok {
		s.mu.Unlock()
		return fenceview.Resource{}, fenceview.Errorf(fenceview.ENOTFOUND, "no resource %q", resourceID)
	}
	b := s.begin()
	w := b.get(resourceID)
	b.expireIfDue(w)
	r := &w.res
	if r.Holder != "" && r.Token > to {
		s.mu.Unlock()
		return fenceview.Resource{}, &fenceview.Error{Code: fenceview.ECONFLICT,
			Message: "the lock is held with a token above the one asked for; expire the lock first, or recover to at least its token",
			Fields:  map[string]any{"holder": r.Holder, "token": r.Token}}
	}
	oldMark, oldLast := r.HighWaterMark, r.LastToken
	r.LastToken = to
	r.HighWaterMark = min(r.HighWaterMark, to)
	r.CounterAlarm = 0
	b.event(fenceview.Event{Type: fenceview.EventRecover, ResourceID: resourceID, Token: to,
		Presented: oldMark, Required: oldLast, Source: "admin"}) // what it replaced: Event.Replaced
	b.resets++
	view := s.view(w)
	if err := s.finish(b); err != nil {
		return fenceview.Resource{}, err
	}
	s.log.Warn("resource recovered by an admin: counter and mark set back", "resource", resourceID,
		"token", to, "previousMark", oldMark, "previousLastToken", oldLast)
	return view, nil
}
