package issuer

import (
	"context"
	"slices"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
)

// A multi-lock takes several locks in one atomic change, or none. Waiting,
// it holds none of them (no partial set), so two multi-locks can never
// deadlock: it is granted when every one is free at once, in the batch
// that frees the last (handOffMulti).

// AcquireAll grants every lock of req.ResourceIDs to req.Holder in one
// atomic change, each with a new token, in the order asked, or none:
// ELOCKHELD "lock held", field held (each lock held by another: its
// resourceId, holder, expiresAt). With req.Wait it waits until all are
// free at once, holding none meanwhile. A lock the holder already holds
// is granted again (re-entrant, a new token), as Acquire does.
func (s *Service) AcquireAll(ctx context.Context, req fenceview.AcquireAllRequest) ([]fenceview.Grant, error) {
	gs, err := s.acquireAll(ctx, req)
	if err != nil {
		return nil, err
	}
	return s.signAll(gs)
}

func (s *Service) acquireAll(ctx context.Context, req fenceview.AcquireAllRequest) ([]fenceview.Grant, error) {
	ids := req.ResourceIDs
	if err := validateResourceList(ids); err != nil {
		return nil, err
	}
	for _, id := range ids {
		if err := (fenceview.AcquireRequest{ResourceID: id, Holder: req.Holder, Lease: req.Lease, Wait: req.Wait, LockDelay: req.LockDelay}).Validate(); err != nil {
			return nil, err
		}
	}
	if err := ValidateNewID(req.Holder); err != nil {
		return nil, err
	}
	lease := req.Lease
	if lease == 0 {
		lease = fenceview.DefaultLease
	}
	g := grantReq{kind: fenceview.KindMulti, holder: req.Holder, owner: ownerOf(ctx), leaseMs: lease.Milliseconds(), delayMs: req.LockDelay.Milliseconds()}
	r, err := s.change(ctx, func(b *batch) outcome { return b.takeAll(ids, req.Wait, g) })
	return r.grants, err
}

// takeAll decides, under s.mu, a multi-lock of ids by g: every lock now, a
// refusal, or a waiter queued on each of them, holding none.
func (b *batch) takeAll(ids []string, wait time.Duration, g grantReq) outcome {
	s := b.s
	for _, id := range ids {
		if err := b.admit(id); err != nil {
			return refused(err)
		}
	}
	for _, id := range ids {
		b.expireIfDue(b.get(id))
	}
	if b.takeable(ids, g) {
		gs, err := b.grantAll(ids, g)
		if err != nil {
			return refused(err)
		}
		return outcome{commit: true, answer: waitResult{grants: gs}}
	}
	o := b.mayWait(wait, g, b.heldAllError(ids, g))
	if wt := o.waiter; wt != nil {
		wt.ids = slices.Clone(ids)
		for _, id := range ids {
			s.multi[id] = append(s.multi[id], wt)
		}
		wt.queuedOn = ids[0]
		wt.dequeue = func() (error, bool) {
			if !s.dropMulti(wt) {
				return nil, false
			}
			return s.begin().heldAllError(ids, g), true
		}
	}
	return o
}

// takeable reports whether every lock of ids can be granted to g now: free
// with nobody waiting and no delay, or held by g's holder and owner.
func (b *batch) takeable(ids []string, g grantReq) bool {
	for _, id := range ids {
		w := b.get(id)
		if !(b.vacant(w) || holdsExclusively(&w.res, g.holder, g.owner)) {
			return false
		}
	}
	return true
}

// grantAll grants every lock of ids to g, in order. A failure (a lock's
// tokens exhausted) leaves b half made: the caller must not finish it.
func (b *batch) grantAll(ids []string, g grantReq) ([]fenceview.Grant, error) {
	gs := make([]fenceview.Grant, len(ids))
	for i, id := range ids {
		var err error
		if gs[i], err = b.grant(b.get(id), g); err != nil {
			return nil, err
		}
	}
	return gs, nil
}

// dropMulti takes a waiting multi-lock out of the queue of each of its
// locks, reporting whether it was queued. s.mu must be held.
func (s *Service) dropMulti(mw *waiter) bool {
	found := false
	for _, id := range mw.ids {
		q := s.multi[id]
		if removeWaiter(&q, mw) {
			found = true
		}
		if len(q) == 0 {
			delete(s.multi, id)
		} else {
			s.multi[id] = q
		}
	}
	return found
}

// handOffMulti grants the first multi-lock waiting for id whose every
// lock is free now, in this batch. Waiting multi-locks are queued by each
// of their locks, so a release looks only at those that name its lock.
func (b *batch) handOffMulti(id string) {
	for _, mw := range b.s.multi[id] {
		if !b.waiting(mw) || !b.takeableNoExpiry(mw.ids, mw.grantReq) {
			continue
		}
		if err := handOffRefused(mw.grantReq); err != nil {
			b.take(mw, handoff{err: err})
			continue
		}
		// Each grant is checked first, so grantAll cannot fail half way
		// but for exhausted tokens, which leaves the waiter waiting.
		if !b.grantable(mw.ids) {
			continue
		}
		gs, err := b.grantAll(mw.ids, mw.grantReq)
		if err != nil {
			continue
		}
		b.take(mw, handoff{gs: gs}) // out of its queues once b is applied
		return
	}
}

// takeableNoExpiry is takeable for a hand-off: a lease that has run out
// counts as held until the sweep records it, so a hand-off never expires
// other locks from inside another lock's change.
func (b *batch) takeableNoExpiry(ids []string, g grantReq) bool {
	for _, id := range ids {
		var r *fenceview.Resource
		var waiting int
		if w, ok := b.lookup(id); ok {
			r, waiting = &w.res, len(w.waiters)
		} else if st := b.s.resources[id]; st != nil {
			r, waiting = st.res.Load(), len(st.waiters)
		} else {
			continue // never known: free
		}
		free := r.Holder == "" && waiting == 0 && !r.AvailableAt.After(b.now)
		if !free && !holdsExclusively(r, g.holder, g.owner) {
			return false
		}
	}
	return true
}

// grantable reports whether every lock of ids has a token left to grant.
func (b *batch) grantable(ids []string) bool {
	for _, id := range ids {
		var r fenceview.Resource
		if w, ok := b.lookup(id); ok {
			r = w.res
		} else if st := b.s.resources[id]; st != nil {
			r = *st.res.Load()
		}
		if _, err := nextToken(&r); err != nil {
			return false
		}
	}
	return true
}

// heldAllError is the refusal of a multi-lock: every lock of ids that g
// cannot take now, with its holder, or its lock-delay's end.
func (b *batch) heldAllError(ids []string, g grantReq) error {
	held := []map[string]any{}
	for _, id := range ids {
		var r *fenceview.Resource
		if w, ok := b.lookup(id); ok {
			r = &w.res
		} else if st := b.s.resources[id]; st != nil {
			r = st.res.Load()
		} else {
			continue
		}
		switch {
		case r.Holder != "" && !holdsExclusively(r, g.holder, g.owner):
			held = append(held, map[string]any{"resourceId": id, "holder": r.Holder, "expiresAt": r.ExpiresAt})
		case r.Holder == "" && r.AvailableAt.After(b.now):
			held = append(held, map[string]any{"resourceId": id, "holder": nil, "availableAt": r.AvailableAt})
		}
	}
	return &fenceview.Error{Code: fenceview.ELOCKHELD, Message: "lock held", Fields: map[string]any{"held": held}}
}

// ReleaseAll gives up one hold of each of resourceIDs that holder holds,
// in one atomic change; the others are listed as not held.
func (s *Service) ReleaseAll(ctx context.Context, resourceIDs []string, holder string) (fenceview.Released, error) {
	if err := validateResourceList(resourceIDs); err != nil {
		return fenceview.Released{}, err
	}
	if err := guard.ValidateHolderID(holder); err != nil {
		return fenceview.Released{}, invalid(err)
	}
	owner := ownerOf(ctx)
	var out fenceview.Released
	_, err := s.change(ctx, func(b *batch) outcome {
		out = b.releaseAll(resourceIDs, holder, owner)
		return committed()
	})
	if err != nil {
		return fenceview.Released{}, err
	}
	return out, nil
}

// releaseAll gives up one hold of each of ids that holder holds (with
// owner), under s.mu, and lists what it released and what was not held.
func (b *batch) releaseAll(ids []string, holder, owner string) fenceview.Released {
	out := fenceview.Released{Released: []string{}, NotHeld: []string{}}
	for _, id := range ids {
		if _, ok := b.s.resources[id]; !ok {
			out.NotHeld = append(out.NotHeld, id)
			continue
		}
		w := b.get(id)
		b.expireIfDue(w)
		if !holdsExclusively(&w.res, holder, owner) {
			out.NotHeld = append(out.NotHeld, id)
			continue
		}
		b.release(w)
		out.Released = append(out.Released, id)
	}
	return out
}

// validateResourceList checks a multi-lock's list: 1 to MaxLockAll
// distinct valid ids.
func validateResourceList(ids []string) error {
	if len(ids) == 0 || len(ids) > fenceview.MaxLockAll {
		return fenceview.Errorf(fenceview.EINVALID, "resources must list 1 to %d locks", fenceview.MaxLockAll)
	}
	seen := make(map[string]bool, len(ids))
	for i, id := range ids {
		if err := guard.ValidateResourceID(id); err != nil {
			return fenceview.Errorf(fenceview.EINVALID, "resources[%d]: %s", i, err.Error())
		}
		if seen[id] {
			return fenceview.Errorf(fenceview.EINVALID, "resources[%d]: %q is listed twice", i, id)
		}
		seen[id] = true
	}
	return nil
}
