package issuer

import (
	"context"
	"slices"

	"github.com/fenceview/fenceview"
)

// A semaphore of N permits is the N locks name#0 .. name#<N-1>, its slots:
// each an ordinary resource with its own tokens, mark and history. Its
// permits are kept on slot 0's record (fenceview.Resource.Permits), so
// they are as durable as any lock's state, and a failed commit undoes a
// change of them with the rest. Its waiters, like a lock's, are memory
// only (permitQ).

// AcquirePermit grants holder the lowest free slot of the semaphore
// req.Semaphore, waiting up to req.Wait, first come first served, for any
// slot. The grant is the slot's (ResourceID fenceview.SlotID(name, slot)),
// signed as any lock's. The first acquire of a name fixes its permits;
// another count is refused (EPERMITSMISMATCH "permits mismatch", field permits).
// All slots taken: ENOPERMIT "no permit free", field permits. A holder
// may hold several slots, one grant each: an acquire never re-enters one.
func (s *Service) AcquirePermit(ctx context.Context, req fenceview.PermitRequest) (fenceview.Grant, error) {
	g, err := s.acquirePermit(ctx, req)
	if err != nil {
		return g, err
	}
	return s.sign(g)
}

func (s *Service) acquirePermit(ctx context.Context, req fenceview.PermitRequest) (fenceview.Grant, error) {
	name := req.Semaphore
	if err := validateSemaphore(name, req.Permits); err != nil {
		return fenceview.Grant{}, err
	}
	if err := req.Validate(); err != nil {
		return fenceview.Grant{}, err
	}
	if err := ValidateNewID(req.Holder); err != nil {
		return fenceview.Grant{}, err
	}
	lease := req.Lease
	if lease == 0 {
		lease = fenceview.DefaultLease
	}
	g := grantReq{kind: fenceview.KindPermit, holder: req.Holder, owner: ownerOf(ctx), leaseMs: lease.Milliseconds(), delayMs: req.LockDelay.Milliseconds()}
	r, err := s.change(ctx, func(b *batch) outcome { return b.takePermit(req, g) })
	return r.granted(), err
}

// takePermit decides, under s.mu, an acquire of a permit of req.Semaphore
// by g: the lowest free slot now, a refusal, or a waiter queued on the
// semaphore, first come first served.
func (b *batch) takePermit(req fenceview.PermitRequest, g grantReq) outcome {
	s, name := b.s, req.Semaphore
	permits := b.permits(name)
	if permits == 0 { // the first acquire of name
		slot0 := fenceview.SlotID(name, 0)
		if err := b.admit(slot0); err != nil {
			return refused(err)
		}
		b.get(slot0).res.Permits = req.Permits
		permits = req.Permits
	} else if permits != req.Permits {
		return refused(&fenceview.Error{Code: fenceview.EPERMITSMISMATCH, Message: "permits mismatch",
			Fields: map[string]any{"permits": permits}})
	}
	// Leases that ran out are recorded first: their slots go to the
	// waiters already queued, before this newcomer.
	for i := range permits {
		if st := s.resources[fenceview.SlotID(name, i)]; st != nil {
			if r := st.res.Load(); r.Holder != "" && !r.ExpiresAt.After(b.now) {
				b.expireIfDue(b.get(st.id))
			}
		}
	}
	if b.permitWaiters(name) == 0 {
		w, err := b.freeSlot(name, permits)
		if err != nil {
			return refused(err)
		}
		if w != nil {
			return b.grantNow(w, g)
		}
	}
	o := b.mayWait(req.Wait, g, noPermitError(permits))
	if wt := o.waiter; wt != nil {
		s.permitQ[name] = append(s.permitQ[name], wt)
		wt.sem = name
		wt.queuedOn = fenceview.SlotID(name, 0)
		wt.dequeue = func() (error, bool) {
			q := s.permitQ[name]
			if !removeWaiter(&q, wt) {
				return nil, false
			}
			s.setPermitQ(name, q)
			return noPermitError(s.permitsOf(name)), true
		}
	}
	return o
}

// freeSlot returns the working copy of the lowest slot of name below
// permits that a newcomer can be granted now, nil when every one is
// taken, or the error of admitting a new one. A slot whose tokens are
// exhausted is skipped: it waits for an admin's recovery while the other
// slots serve.
func (b *batch) freeSlot(name string, permits int) (*state, error) {
	for i := range permits {
		id := fenceview.SlotID(name, i)
		if w, ok := b.lookup(id); ok {
			if b.vacant(w) && fenceview.NextToken(w.res) != 0 {
				return w, nil
			}
			continue
		}
		st := b.s.resources[id]
		if st == nil {
			if err := b.admit(id); err != nil {
				return nil, err
			}
			return b.get(id), nil
		}
		if r := st.res.Load(); r.Holder == "" && len(st.waiters) == 0 && !r.AvailableAt.After(b.now) && fenceview.NextToken(*r) != 0 {
			return b.get(id), nil
		}
	}
	return nil, nil
}

// permitWaiters counts the semaphore name's waiters as this batch sees
// them: those it answers are gone.
func (b *batch) permitWaiters(name string) int {
	n := 0
	for _, wt := range b.s.permitQ[name] {
		if b.waiting(wt) {
			n++
		}
	}
	return n
}

// handOffPermit grants w, a free slot, to its semaphore's first waiter,
// reporting whether it did. A slot at or above the semaphore's permits
// (they were lowered) is not granted again.
func (b *batch) handOffPermit(w *state) bool {
	name, slot, ok := fenceview.ParseSlotID(w.res.ResourceID)
	if !ok {
		return false
	}
	if slot >= b.permits(name) || fenceview.NextToken(w.res) == 0 {
		return false // lowered away, or its tokens exhausted: the waiters wait for another slot
	}
	for _, next := range b.s.permitQ[name] {
		if !b.waiting(next) {
			continue
		}
		if err := handOffRefused(next.grantReq); err != nil {
			b.take(next, handoff{err: err})
			continue
		}
		g, err := b.grant(w, next.grantReq)
		if err != nil {
			return false // not for a checked slot; the waiter waits on
		}
		b.take(next, handoff{g: &g})
		return true
	}
	return false
}

func (s *Service) setPermitQ(name string, q []*waiter) {
	if len(q) == 0 {
		delete(s.permitQ, name)
	} else {
		s.permitQ[name] = q
	}
}

// permits is the semaphore name's permits as this batch sees them, 0 for
// a name never acquired.
func (b *batch) permits(name string) int {
	if w, ok := b.lookup(fenceview.SlotID(name, 0)); ok {
		return w.res.Permits
	}
	return b.s.permitsOf(name)
}

// permitsOf is the semaphore name's permits. s.mu must be held.
func (s *Service) permitsOf(name string) int {
	if st := s.resources[fenceview.SlotID(name, 0)]; st != nil {
		return st.res.Load().Permits
	}
	return 0
}

// ReleasePermit gives up holder's hold of slot of the semaphore name: the
// slot's lock's Release.
func (s *Service) ReleasePermit(ctx context.Context, name, holder string, slot int) (int, error) {
	if err := validateSemaphore(name, 1); err != nil {
		return 0, err
	}
	if slot < 0 || slot >= fenceview.MaxPermits {
		return 0, fenceview.Errorf(fenceview.EINVALID, "slot must be between 0 and %d", fenceview.MaxPermits-1)
	}
	return s.Release(ctx, fenceview.SlotID(name, slot), holder)
}

// SetPermits changes the permits of the semaphore name (an admin's call),
// creating it if no acquire named it yet. Held slots above the new count
// stay held until released and are not granted again; waiters are served
// by new slots at once.
func (s *Service) SetPermits(ctx context.Context, name string, permits int) (fenceview.Semaphore, error) {
	if err := validateSemaphore(name, permits); err != nil {
		return fenceview.Semaphore{}, err
	}
	if _, err := s.change(ctx, func(b *batch) outcome { return b.setPermits(name, permits) }); err != nil {
		return fenceview.Semaphore{}, err
	}
	return s.Semaphore(name)
}

// setPermits sets the permits of the semaphore name under s.mu and serves
// its waiters from the slots that are free now.
func (b *batch) setPermits(name string, permits int) outcome {
	slot0 := fenceview.SlotID(name, 0)
	if err := b.admit(slot0); err != nil {
		return refused(err)
	}
	b.get(slot0).res.Permits = permits
	b.event(fenceview.Event{Type: fenceview.EventPermits, ResourceID: slot0, Permits: permits, Source: "admin"})
	for b.permitWaiters(name) > 0 {
		w, err := b.freeSlot(name, permits)
		if err != nil || w == nil || !b.handOffPermit(w) {
			break
		}
	}
	return committed()
}

// Semaphore returns the state of the semaphore name: ENOTFOUND when no
// acquire ever named it.
func (s *Service) Semaphore(name string) (fenceview.Semaphore, error) {
	if err := validateSemaphore(name, 1); err != nil {
		return fenceview.Semaphore{}, err
	}
	s.mu.Lock()
	permits := 0
	if st := s.resources[fenceview.SlotID(name, 0)]; st != nil && st.read() != nil {
		permits = st.read().Permits // as committed, as every reader sees it
	}
	waiters := len(s.permitQ[name])
	s.mu.Unlock()
	if permits == 0 {
		return fenceview.Semaphore{}, fenceview.Errorf(fenceview.ENOTFOUND, "no semaphore %q", name)
	}
	now := s.clock.Now()
	sem := fenceview.Semaphore{Name: name, Permits: permits, Waiters: waiters, Free: permits}
	// The slots known, from a snapshot of the index (outside s.mu): slots
	// above the permits may still be held (the permits were lowered).
	index, _ := s.snapshot()
	walk(index, []string{name + "#"}, "", func(k *known) bool {
		_, slot, ok := fenceview.ParseSlotID(k.id)
		if !ok {
			return true
		}
		r := k.read()
		if r == nil {
			return true
		}
		held := r.Holder != "" && r.ExpiresAt.After(now)
		if held {
			sem.Held = append(sem.Held, fenceview.Slot{Slot: slot, ResourceID: k.id, Holder: r.Holder, Token: r.Token, ExpiresAt: r.ExpiresAt})
		}
		if slot < permits && (held || r.AvailableAt.After(now) || fenceview.NextToken(*r) == 0) {
			sem.Free-- // held, in its delay, or out of tokens (freeSlot passes it over)
		}
		return true
	})
	// The index orders "jobs#10" before "jobs#2": order by slot.
	slices.SortFunc(sem.Held, func(a, b fenceview.Slot) int { return a.Slot - b.Slot })
	return sem, nil
}

func noPermitError(permits int) error {
	return &fenceview.Error{Code: fenceview.ENOPERMIT, Message: "no permit free", Fields: map[string]any{"permits": permits}}
}

// validateSemaphore checks a semaphore's name and a permits count.
func validateSemaphore(name string, permits int) error {
	if err := fenceview.ValidateSemaphoreName(name); err != nil {
		return err
	}
	if err := ValidateNewID(name); err != nil {
		return err
	}
	if permits < 1 || permits > fenceview.MaxPermits {
		return fenceview.FieldErrorf(fenceview.EINVALID, "permits", "permits must be between 1 and %d", fenceview.MaxPermits)
	}
	return nil
}
