package httpapi

import (
	"context"
	"errors"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/wire"
)

// The primitives over the JSON API: semaphores, multi-locks and
// elections. Each is made of lock resources, so each request is checked
// against the caller's prefixes for every lock it touches (a semaphore's
// slots, a multi-lock's list, an election's lock) and refused whole when
// one is outside. Each operation is one function shared with the RPC
// stream: it validates, checks access, calls the service and answers with
// a status and a body.

// Validation shared by the primitives' requests.

// required refuses an absent field.
func required(field string, v *string) error {
	if v == nil {
		return fenceview.FieldErrorf(fenceview.EINVALID, field, "field %q is required", field)
	}
	return nil
}

// requiredID refuses an absent or invalid id, for the calls whose service
// takes no request that validates itself.
func requiredID(field string, v *string) error {
	if err := required(field, v); err != nil {
		return err
	}
	return fenceview.ValidateHolder(field, *v)
}

// validateWait refuses a waitMs above MaxWait, the longest a request may
// hold its connection waiting (the service refuses one below zero).
func validateWait(waitMs wire.Int) error {
	if waitMs.Value > fenceview.MaxWait.Milliseconds() {
		return fenceview.FieldErrorf(fenceview.EINVALID, "waitMs", "waitMs must be between 0 and %d", fenceview.MaxWait.Milliseconds())
	}
	return nil
}

// validateLease refuses a leaseMs given below 1: absent, a lease is the
// default (or the current one), so 0 is never one on the wire. The
// service bounds it above.
func validateLease(leaseMs wire.Int) error {
	if leaseMs.Set && leaseMs.Value < 1 {
		return fenceview.FieldErrorf(fenceview.EINVALID, "leaseMs", "leaseMs must be between 1 and %d", fenceview.MaxLease.Milliseconds())
	}
	return nil
}

func validatePermits(permits wire.Int) error {
	if !permits.Set {
		return fenceview.FieldErrorf(fenceview.EINVALID, "permits", `field "permits" (an integer from 1 to %d) is required`, fenceview.MaxPermits)
	}
	if permits.Value < 1 || permits.Value > fenceview.MaxPermits {
		return fenceview.FieldErrorf(fenceview.EINVALID, "permits", "permits must be between 1 and %d", fenceview.MaxPermits)
	}
	return nil
}

// seeSlots refuses, whole, a request on the semaphore name when the
// caller may not use one of its slots 0..n-1.
func seeSlots(ctx context.Context, name string, n int) error {
	// A prefix of "name#" is a prefix of every slot's id; only longer
	// prefixes ("jobs#1") need each slot looked at.
	if auth.FromContext(ctx).Sees(name + "#") {
		return nil
	}
	for i := range n {
		if err := seeResource(ctx, fenceview.SlotID(name, i)); err != nil {
			return err
		}
	}
	return nil
}

// validateResourceList checks a multi-lock's list (1..MaxLockAll distinct
// valid ids) and the caller's access to each: one outside its prefixes
// refuses the whole request.
func validateResourceList(ctx context.Context, list *[]string) error {
	if list == nil {
		return fenceview.FieldErrorf(fenceview.EINVALID, "resources", `field "resources" (an array of resource ids) is required`)
	}
	ids := *list
	if len(ids) < 1 || len(ids) > fenceview.MaxLockAll {
		return fenceview.Errorf(fenceview.EINVALID, "resources must list 1 to %d resource ids, not %d", fenceview.MaxLockAll, len(ids))
	}
	seen := make(map[string]bool, len(ids))
	for i, id := range ids {
		if err := guard.ValidateResourceID(id); err != nil {
			return fenceview.Errorf(fenceview.EINVALID, "resources[%d]: %v", i, err)
		}
		if seen[id] {
			return fenceview.Errorf(fenceview.EINVALID, "resources[%d]: %q is listed twice", i, id)
		}
		seen[id] = true
	}
	for _, id := range ids {
		if err := seeResource(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// Semaphores.

func (s *Server) semaphoreAcquire(ctx context.Context, name string, req wire.SemaphoreRequest) (any, error) {
	start := time.Now()
	err := required("holder", req.Holder)
	if err == nil {
		err = validatePermits(req.Permits)
	}
	if err == nil {
		err = validateLease(req.LeaseMs)
	}
	if err == nil {
		err = validateWait(req.WaitMs)
	}
	if err != nil {
		return nil, err
	}
	pr := fenceview.PermitRequest{Semaphore: name, Holder: *req.Holder, Permits: int(req.Permits.Value),
		Lease: millis(req.LeaseMs), Wait: millis(req.WaitMs), LockDelay: millis(req.LockDelayMs)}
	// Validated here as well as by the service: which slots it names must
	// be known before the caller's access to them is checked.
	err = pr.Validate()
	if err == nil {
		err = seeSlots(ctx, name, pr.Permits)
	}
	if err != nil {
		return nil, err
	}
	g, err := s.Service.AcquirePermit(ctx, pr)
	if err != nil {
		return nil, hidePermits(ctx, name, int(req.Permits.Value), err)
	}
	s.observeGrant(fenceview.KindPermit, start)
	_, slot, _ := fenceview.ParseSlotID(g.ResourceID)
	return wire.PermitGrant{Grant: grantWire(g), Semaphore: name, Slot: slot}, nil
}

// hidePermits keeps a semaphore's permits from a key that may not use
// every one of its slots: a refusal naming a count other than the one
// asked ("permits mismatch", or "no permit free" after an admin changed
// it) becomes the 403 that asking with that count gets (seeSlots), so no
// answer tells such a key more than "not the count you asked".
func hidePermits(ctx context.Context, name string, asked int, err error) error {
	var fe *fenceview.Error
	if !errors.As(err, &fe) {
		return err
	}
	n, ok := fe.Fields["permits"].(int)
	if !ok || n == asked || seeSlots(ctx, name, n) == nil {
		return err
	}
	return fenceview.Errorf(fenceview.EFORBIDDEN, "this key may not use every slot of semaphore %q", name)
}

func (s *Server) semaphoreRelease(ctx context.Context, name string, req wire.SemaphoreRequest) (any, error) {
	err := fenceview.ValidateSemaphoreName(name)
	if err == nil {
		err = requiredID("holder", req.Holder)
	}
	if err == nil && (!req.Slot.Set || req.Slot.Value < 0 || req.Slot.Value >= fenceview.MaxPermits) {
		err = fenceview.FieldErrorf(fenceview.EINVALID, "slot", `field "slot" (an integer from 0 to %d) is required`, fenceview.MaxPermits-1)
	}
	if err != nil {
		return nil, err
	}
	slot := int(req.Slot.Value)
	id := fenceview.SlotID(name, slot)
	if err := seeResource(ctx, id); err != nil {
		return nil, err
	}
	left, err := s.Service.ReleasePermit(ctx, name, *req.Holder, slot)
	if err != nil {
		return nil, err
	}
	return wire.SlotReleased{ResourceID: id, HoldCount: left, Released: true, Semaphore: name, Slot: slot}, nil
}

// semaphorePermits changes a semaphore's permits (admin).
func (s *Server) semaphorePermits(ctx context.Context, name string, req wire.PermitsRequest) (any, error) {
	err := fenceview.ValidateSemaphoreName(name)
	if err == nil {
		err = validatePermits(req.Permits)
	}
	if err == nil && !auth.FromContext(ctx).Allows(auth.Manage) {
		err = fenceview.Errorf(fenceview.EFORBIDDEN, "admin only")
	}
	if err == nil {
		err = seeSlots(ctx, name, int(req.Permits.Value))
	}
	if err != nil {
		return nil, err
	}
	sem, err := s.Service.SetPermits(ctx, name, int(req.Permits.Value))
	if err != nil {
		return nil, err
	}
	return semaphoreWire(sem), nil
}

func (s *Server) semaphoreState(ctx context.Context, name string) (any, error) {
	err := fenceview.ValidateSemaphoreName(name)
	if err == nil {
		// Slot 0 first, so a key that may not see the semaphore does not
		// learn whether it exists.
		err = seeResource(ctx, fenceview.SlotID(name, 0))
	}
	if err != nil {
		return nil, err
	}
	sem, err := s.Service.Semaphore(name)
	if err != nil {
		return nil, err
	}
	n := sem.Permits
	for _, h := range sem.Held { // slots above a lowered count, still held
		n = max(n, h.Slot+1)
	}
	if err := seeSlots(ctx, name, n); err != nil {
		return nil, err
	}
	return semaphoreWire(sem), nil
}

func semaphoreWire(sem fenceview.Semaphore) wire.Semaphore {
	held := make([]wire.Slot, 0, len(sem.Held))
	for _, h := range sem.Held {
		held = append(held, wire.Slot{Slot: h.Slot, ResourceID: h.ResourceID, Holder: h.Holder, Token: h.Token, ExpiresAt: wire.Time(h.ExpiresAt)})
	}
	return wire.Semaphore{Name: sem.Name, Permits: sem.Permits, Held: held, Free: sem.Free, Waiters: sem.Waiters}
}

// Multi-locks.

func validateLockAll(ctx context.Context, req wire.LockAllRequest) error {
	if err := validateResourceList(ctx, req.Resources); err != nil {
		return err
	}
	if err := requiredID("holder", req.Holder); err != nil {
		return err
	}
	if err := validateLease(req.LeaseMs); err != nil {
		return err
	}
	return validateWait(req.WaitMs)
}

func (s *Server) acquireAll(ctx context.Context, _ string, req wire.LockAllRequest) (any, error) {
	start := time.Now()
	if err := validateLockAll(ctx, req); err != nil {
		return nil, err
	}
	grants, err := s.Service.AcquireAll(ctx, fenceview.AcquireAllRequest{ResourceIDs: *req.Resources, Holder: *req.Holder,
		Lease: millis(req.LeaseMs), Wait: millis(req.WaitMs), LockDelay: millis(req.LockDelayMs)})
	if err != nil {
		return nil, err
	}
	s.observeGrant(fenceview.KindMulti, start)
	out := make([]wire.Grant, 0, len(grants))
	for _, g := range grants {
		out = append(out, grantWire(g))
	}
	return wire.Grants{Grants: out}, nil
}

func (s *Server) releaseAll(ctx context.Context, _ string, req wire.LockAllRequest) (any, error) {
	err := validateResourceList(ctx, req.Resources)
	if err == nil {
		err = requiredID("holder", req.Holder)
	}
	if err != nil {
		return nil, err
	}
	rel, err := s.Service.ReleaseAll(ctx, *req.Resources, *req.Holder)
	if err != nil {
		return nil, err
	}
	return wire.ReleasedAll{Released: nonNil(rel.Released), NotHeld: nonNil(rel.NotHeld)}, nil
}

// nonNil is ids, or an empty list: a JSON array either way, never null.
func nonNil(ids []string) []string {
	if ids == nil {
		return []string{}
	}
	return ids
}

// Elections.

// validateElection checks the election's name (its lock's resource id,
// within the caller's prefixes) and the fields every election request has.
func validateElection(ctx context.Context, name string, req wire.ElectionRequest) error {
	if err := guard.ValidateResourceID(name); err != nil {
		return fenceview.Errorf(fenceview.EINVALID, "election name: %v", err)
	}
	if err := seeResource(ctx, name); err != nil {
		return err
	}
	if err := required("candidate", req.Candidate); err != nil {
		return err
	}
	if err := validateLease(req.LeaseMs); err != nil {
		return err
	}
	return validateWait(req.WaitMs) // the service checks the rest (fenceview.CampaignRequest.Validate)
}

func leaderWire(l fenceview.Leader) wire.Leader {
	return wire.Leader{Candidate: l.Candidate, Value: l.Value, Term: l.Term, Since: wire.Time(l.Since), ExpiresAt: wire.Time(l.ExpiresAt)}
}

func electedWire(name string, l fenceview.Leader, g fenceview.Grant) wire.Elected {
	return wire.Elected{Name: name, Leader: leaderWire(l), Fencing: grantWire(g).Fencing}
}

func (s *Server) campaign(ctx context.Context, name string, req wire.ElectionRequest) (any, error) {
	start := time.Now()
	if err := validateElection(ctx, name, req); err != nil {
		return nil, err
	}
	var value string
	if req.Value != nil {
		value = *req.Value
	}
	l, g, err := s.Service.Campaign(ctx, fenceview.CampaignRequest{Election: name, Candidate: *req.Candidate, Value: value,
		Lease: millis(req.LeaseMs), Wait: millis(req.WaitMs)})
	if err != nil {
		return nil, err
	}
	s.observeGrant(fenceview.KindElection, start)
	return electedWire(name, l, g), nil
}

func (s *Server) proclaim(ctx context.Context, name string, req wire.ElectionRequest) (any, error) {
	err := validateElection(ctx, name, req)
	if err == nil && req.Value == nil {
		err = fenceview.FieldErrorf(fenceview.EINVALID, "value", `field "value" (a string) is required`)
	}
	if err != nil {
		return nil, err
	}
	l, err := s.Service.Proclaim(ctx, name, *req.Candidate, *req.Value)
	if err != nil {
		return nil, err
	}
	leader := leaderWire(l)
	return wire.Election{Name: name, Leader: &leader}, nil
}

func (s *Server) resign(ctx context.Context, name string, req wire.ElectionRequest) (any, error) {
	if err := validateElection(ctx, name, req); err != nil {
		return nil, err
	}
	if err := s.Service.Resign(ctx, name, *req.Candidate); err != nil {
		return nil, err
	}
	return wire.Resigned{Name: name, Resigned: true}, nil
}

func (s *Server) renewLeadership(ctx context.Context, name string, req wire.ElectionRequest) (any, error) {
	if err := validateElection(ctx, name, req); err != nil {
		return nil, err
	}
	l, g, err := s.Service.RenewLeadership(ctx, name, *req.Candidate, millis(req.LeaseMs))
	if err != nil {
		return nil, err
	}
	return electedWire(name, l, g), nil
}

func (s *Server) electionState(ctx context.Context, name string) (any, error) {
	if err := guard.ValidateResourceID(name); err != nil {
		return nil, fenceview.Errorf(fenceview.EINVALID, "election name: %v", err)
	}
	if err := seeResource(ctx, name); err != nil {
		return nil, err
	}
	l, err := s.Service.Leader(name)
	if err != nil {
		return nil, err
	}
	out := wire.Election{Name: name} // Leader null: nobody leads
	if l != nil {
		leader := leaderWire(*l)
		out.Leader = &leader
	}
	return out, nil
}

// observeGrant tells the metrics of a grant of kind, asked for at start.
func (s *Server) observeGrant(kind fenceview.Kind, start time.Time) {
	if s.ObserveGrant != nil {
		s.ObserveGrant(kind, time.Since(start))
	}
}
