package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/wire"
	"github.com/fenceview/fenceview/internal/wire/op"
)

// Bounds of semaphores, multi-locks and elections the client checks before sending (the server's
// fenceview.MaxPermits, MaxSemaphoreNameLen).
const (
	maxPermits          = 1024
	maxSemaphoreNameLen = 150
)

// Semaphore is a fenced semaphore of N permits: the N locks name#0 ..
// name#<N-1> (its slots) on the server. Every Acquire takes the lowest free
// slot and returns a Permit, whose token is the slot's own: a resource that
// guards the work done under a permit fences it by the slot's resource id
// and token, as for any lock (Curator's InterProcessSemaphoreV2 and
// Redisson's RPermitExpirableSemaphore, with tokens).
//
// The permits are held by the client's holder id (Config.Holder); one holder
// may hold several permits, one Acquire each. Its methods are safe for
// concurrent use.
type Semaphore struct {
	c         *Client
	name      string
	permits   int
	lockDelay time.Duration
	bad       error
}

// Semaphore returns the semaphore name of permits permits (1..1024). The
// first acquire of a name fixes its permits on the server; an acquire
// asking for another number is refused with a *PermitsMismatchError. The
// name is 1..150 bytes without '#'.
func (c *Client) Semaphore(name string, permits int, opts ...LockOption) *Semaphore {
	o := lockOptions(opts)
	return &Semaphore{c: c, name: name, permits: permits, lockDelay: o.lockDelay, bad: o.err}
}

// Name returns the semaphore's name.
func (s *Semaphore) Name() string { return s.name }

func (s *Semaphore) validate() error {
	if s.bad != nil {
		return s.bad
	}
	if err := validateSemaphoreName(s.name); err != nil {
		return err
	}
	if s.permits < 1 || s.permits > maxPermits {
		return invalid("permits", fmt.Errorf("permits %d: want 1..%d", s.permits, maxPermits))
	}
	return guardHolder(s.c.holder)
}

func validateSemaphoreName(name string) error {
	if err := guard.ValidateResourceID(name); err != nil {
		return invalid("name", fmt.Errorf("semaphore name: %w", err))
	}
	if len(name) > maxSemaphoreNameLen || strings.Contains(name, "#") {
		return invalid("name", fmt.Errorf("semaphore name %q: want 1..%d bytes without '#'", name, maxSemaphoreNameLen))
	}
	return nil
}

func guardHolder(holder string) error {
	if err := guard.ValidateHolderID(holder); err != nil {
		return invalid("holder", err)
	}
	return nil
}

// Acquire blocks until a permit is granted or ctx is done. Waiting happens
// on the server, first come first served for any slot, in chunks as
// Mutex.Lock does. The permit's lease (Config.Lease) is renewed by a watchdog
// until Release; its Context is cancelled when the lease is lost.
func (s *Semaphore) Acquire(ctx context.Context) (*Permit, error) {
	return inChunks(ctx, s.validate(), s.acquire, ErrNoPermit)
}

// TryAcquire asks for a permit, waiting on the server up to wait (0: do not
// wait), and returns it, or a *NoPermitError (errors.Is(err, ErrNoPermit))
// when every slot stayed taken.
func (s *Semaphore) TryAcquire(ctx context.Context, wait time.Duration) (*Permit, error) {
	return tryOnce(ctx, s.validate(), wait, s.acquire)
}

func (s *Semaphore) acquire(ctx context.Context, wait time.Duration) (*Permit, error) {
	in := wire.Request{Holder: &s.c.holder, Permits: wire.IntSet(int64(s.permits)), LeaseMs: wire.IntSet(s.c.lease.Milliseconds()),
		WaitMs: wire.IntOf(wait.Milliseconds()), LockDelayMs: wire.IntOf(s.lockDelay.Milliseconds())}
	var g wire.PermitGrant
	sent := s.c.clock.Now()
	err := s.c.exchange(ctx, &op.SemaphoreAcquire, s.name, in, &g, refusal{resource: s.name, asked: s.permits})
	if err != nil {
		return nil, err
	}
	if g.Slot < 0 || g.Slot >= maxPermits || g.ResourceID != slotID(s.name, g.Slot) || g.Fencing.Token <= 0 {
		return nil, fmt.Errorf("fenceview: semaphore %q: grant of slot %d as %q with token %d does not name a slot", s.name, g.Slot, g.ResourceID, g.Fencing.Token)
	}
	lease := s.c.lease
	if g.LeaseMs > 0 {
		lease = time.Duration(g.LeaseMs) * time.Millisecond
	}
	p := &Permit{s: s, slot: g.Slot, resource: g.ResourceID, holder: s.c.holder, fencing: g.Fencing.GuardToken()}
	p.h = s.c.newHold(&p.mu, lease, true, sent, p.renewOnce, nil)
	return p, nil
}

// slotID is the lock resource of a semaphore's slot ("jobs#3").
func slotID(name string, slot int) string { return fmt.Sprintf("%s#%d", name, slot) }

// inChunks calls acquire, waiting on the server in chunks (waitChunk),
// until it succeeds, fails otherwise than busy or ErrLockDelay (the wait's
// end), or ctx is done: what a blocking call does. bad is the call's input
// check: when not nil, it is the answer and nothing is sent.
func inChunks[T any](ctx context.Context, bad error, acquire func(context.Context, time.Duration) (T, error), busy error) (T, error) {
	if bad != nil {
		var zero T
		return zero, bad
	}
	for {
		wait := waitChunk(ctx)
		v, err := acquire(ctx, max(wait, 0))
		if err == nil {
			return v, nil
		}
		var zero T
		if !(errors.Is(err, busy) || errors.Is(err, ErrLockDelay)) || wait <= 0 {
			return zero, err
		}
		if ctx.Err() != nil {
			return zero, fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
	}
}

// tryOnce is what a Try call does: one acquire that waits on the server up
// to wait (0: not at all), unless bad (the input check) or a negative wait
// refuses it before anything is sent.
func tryOnce[T any](ctx context.Context, bad error, wait time.Duration, acquire func(context.Context, time.Duration) (T, error)) (T, error) {
	if bad == nil && wait < 0 {
		bad = invalid("waitMs", fmt.Errorf("negative wait %v", wait))
	}
	if bad != nil {
		var zero T
		return zero, bad
	}
	return acquire(ctx, wait)
}

// waitChunk is the server-side wait of one request of a blocking call:
// up to maxWaitChunk, and when ctx has a deadline, ending a little before
// it so that the server answers before the client gives up.
func waitChunk(ctx context.Context) time.Duration {
	wait := maxWaitChunk
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		wait = min(wait, left-min(left/10, time.Second))
	}
	return wait
}

// Permit is one slot of a Semaphore, held until Release or the loss of its
// lease.
type Permit struct {
	s        *Semaphore
	slot     int
	resource string
	holder   string
	fencing  guard.Token

	mu sync.Mutex
	h  *hold
}

// Slot returns the slot number, 0..permits-1.
func (p *Permit) Slot() int { return p.slot }

// Resource returns the slot's lock resource id ("<name>#<slot>"), which
// guards of the work done under the permit fence by.
func (p *Permit) Resource() string { return p.resource }

// Token returns the slot's fencing token with its signature: what a guard
// of the permit's work checks. It stays the permit's token after the
// permit ends, since a paused holder writes with what it has.
func (p *Permit) Token() Token {
	return Token{Resource: p.resource, Number: p.fencing.Token, Signature: p.fencing.Signature, KeyID: p.fencing.KeyID}
}

// Fencing returns the grant's token envelope (token, issuer, scope, issue
// time, signature).
func (p *Permit) Fencing() guard.Token { return p.fencing }

// Context returns a context cancelled when the permit ends: with cause
// ErrLeaseLost when its lease was lost, ErrUnlocked after Release,
// ErrClosed at the client's Close.
func (p *Permit) Context() context.Context { return p.h.ctx }

// Done is Context().Done().
func (p *Permit) Done() <-chan struct{} { return p.h.ctx.Done() }

func (p *Permit) renewOnce(ctx context.Context) (time.Duration, error) {
	g, err := p.s.c.renew(ctx, p.resource, p.holder)
	return time.Duration(g.LeaseMs) * time.Millisecond, err
}

// Release gives the permit back (POST /v1/semaphores/{name}/release): the
// watchdog stops and Context is cancelled with ErrUnlocked. When the
// server says the slot is no longer this holder's (its lease was lost
// meanwhile), the error matches ErrLeaseExpired, ErrNotOwner or ErrNotHeld
// (as Mutex.Unlock's) and Context is cancelled with ErrLeaseLost.
func (p *Permit) Release(ctx context.Context) error {
	in := wire.Request{Holder: &p.holder, Slot: wire.IntSet(int64(p.slot))}
	err := p.s.c.exchange(ctx, &op.SemaphoreRelease, p.s.name, in, nil, refusal{resource: p.s.name, conflict: "not-owner"})
	switch {
	case lostLease(err):
		p.h.end(fmt.Errorf("%w: %w", ErrLeaseLost, err))
	case err == nil:
		p.h.end(ErrUnlocked)
	}
	return err
}

// SemaphoreState is a semaphore as the server sees it
// (GET /v1/semaphores/{name}).
type SemaphoreState struct {
	Name    string
	Permits int
	Held    []SlotState // by slot number
	Free    int
	Waiters int
}

// SlotState is one held slot of a semaphore.
type SlotState struct {
	Slot      int
	Resource  string
	Holder    string
	Token     int64
	ExpiresAt time.Time
}

// State returns the semaphore's state on the server; ErrNotFound for a
// name never acquired.
func (s *Semaphore) State(ctx context.Context) (SemaphoreState, error) {
	if err := validateSemaphoreName(s.name); err != nil {
		return SemaphoreState{}, err
	}
	var b wire.Semaphore
	if err := s.c.exchange(ctx, &op.Semaphore, s.name, wire.Request{}, &b, refusal{resource: s.name}); err != nil {
		return SemaphoreState{}, err
	}
	st := SemaphoreState{Name: b.Name, Permits: b.Permits, Free: b.Free, Waiters: b.Waiters}
	for _, h := range b.Held {
		st.Held = append(st.Held, SlotState{Slot: h.Slot, Resource: h.ResourceID, Holder: h.Holder, Token: h.Token, ExpiresAt: time.Time(h.ExpiresAt)})
	}
	return st, nil
}
