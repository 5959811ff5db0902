package client

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/wire"
	"github.com/fenceview/fenceview/internal/wire/op"
)

// maxLockAll is the most locks one multi-lock takes (fenceview.MaxLockAll).
const maxLockAll = 64

// MultiLock is a set of locks taken all at once or not at all
// (POST /v1/locks/acquire-all), like Redisson's RedissonMultiLock and
// Curator's InterProcessMultiLock, but atomic on the server: waiting never
// holds part of the set, so two multi-locks over overlapping sets cannot
// deadlock. Each lock of a grant has its own new token.
type MultiLock struct {
	c         *Client
	holder    string
	resources []string
	lockDelay time.Duration
	bad       error
}

// MultiLock returns the multi-lock of holder on resources (1..64 distinct
// resource ids).
func (c *Client) MultiLock(holder string, resources []string, opts ...LockOption) *MultiLock {
	o := lockOptions(opts)
	return &MultiLock{c: c, holder: holder, resources: append([]string(nil), resources...), lockDelay: o.lockDelay, bad: o.err}
}

// LockAll takes every lock of resources for holder at once, blocking until
// they are all free together or ctx is done: c.MultiLock(holder,
// resources).Lock(ctx).
func (c *Client) LockAll(ctx context.Context, holder string, resources ...string) (*Locks, error) {
	return c.MultiLock(holder, resources).Lock(ctx)
}

func (m *MultiLock) validate() error {
	if m.bad != nil {
		return m.bad
	}
	if err := guardHolder(m.holder); err != nil {
		return err
	}
	if len(m.resources) < 1 || len(m.resources) > maxLockAll {
		return invalid("resources", fmt.Errorf("%d resources: want 1..%d", len(m.resources), maxLockAll))
	}
	seen := make(map[string]bool, len(m.resources))
	for _, r := range m.resources {
		if err := guard.ValidateResourceID(r); err != nil {
			return invalid("resources", err)
		}
		if seen[r] {
			return invalid("resources", fmt.Errorf("resource %q listed twice", r))
		}
		seen[r] = true
	}
	return nil
}

// Lock blocks until every lock is granted at once or ctx is done, waiting
// on the server in chunks as Mutex.Lock does. The leases are renewed
// together by one watchdog until Unlock.
func (m *MultiLock) Lock(ctx context.Context) (*Locks, error) {
	return inChunks(ctx, m.validate(), m.acquire, ErrHeld)
}

// TryLock asks for every lock at once, waiting on the server up to wait
// (0: do not wait); when some stayed held by others it returns a
// *LocksHeldError (errors.Is(err, ErrHeld)) naming them, and holds none.
func (m *MultiLock) TryLock(ctx context.Context, wait time.Duration) (*Locks, error) {
	return tryOnce(ctx, m.validate(), wait, m.acquire)
}

func (m *MultiLock) acquire(ctx context.Context, wait time.Duration) (*Locks, error) {
	in := wire.Request{Resources: &m.resources, Holder: &m.holder, LeaseMs: wire.IntSet(m.c.lease.Milliseconds()),
		WaitMs: wire.IntOf(wait.Milliseconds()), LockDelayMs: wire.IntOf(m.lockDelay.Milliseconds())}
	var out wire.Grants
	sent := m.c.clock.Now()
	err := m.c.exchange(ctx, &op.AcquireAll, "", in, &out, refusal{})
	if err != nil {
		return nil, err
	}
	if len(out.Grants) != len(m.resources) {
		return nil, fmt.Errorf("fenceview: acquire-all answered %d grants for %d resources", len(out.Grants), len(m.resources))
	}
	l := &Locks{c: m.c, holder: m.holder, resources: m.resources, fencing: make(map[string]guard.Token, len(m.resources))}
	lease := m.c.lease
	for i, g := range out.Grants {
		if g.ResourceID != m.resources[i] || g.Fencing.Token <= 0 {
			return nil, fmt.Errorf("fenceview: acquire-all grant %d is for %q with token %d, asked %q", i, g.ResourceID, g.Fencing.Token, m.resources[i])
		}
		l.fencing[g.ResourceID] = g.Fencing.GuardToken()
		if g.LeaseMs > 0 {
			lease = min(lease, time.Duration(g.LeaseMs)*time.Millisecond)
		}
	}
	l.h = m.c.newHold(&l.mu, lease, true, sent, l.renewOnce, nil)
	return l, nil
}

// Locks is the grant of a MultiLock: every lock of its set, held together
// until Unlock or the loss of any one lease.
type Locks struct {
	c         *Client
	holder    string
	resources []string
	fencing   map[string]guard.Token // read-only once made

	mu sync.Mutex
	h  *hold
}

// Resources returns the locks' resource ids, in the order asked.
func (l *Locks) Resources() []string { return append([]string(nil), l.resources...) }

// Tokens maps each resource to its grant's fencing token.
func (l *Locks) Tokens() map[string]int64 {
	m := make(map[string]int64, len(l.fencing))
	for r, f := range l.fencing {
		m[r] = f.Token
	}
	return m
}

// Token returns the token of resource's lock with its signature, the zero
// Token for a resource not in the set.
func (l *Locks) Token(resource string) Token {
	f, ok := l.fencing[resource]
	if !ok {
		return Token{}
	}
	return Token{Resource: resource, Number: f.Token, Signature: f.Signature, KeyID: f.KeyID}
}

// Fencing returns the token envelope of resource's grant, the zero
// guard.Token for a resource not in the set.
func (l *Locks) Fencing(resource string) guard.Token { return l.fencing[resource] }

// Context returns a context cancelled when the set is no longer held
// whole: with cause ErrLeaseLost when the lease of any lock was lost,
// ErrUnlocked after Unlock, ErrClosed at the client's Close.
func (l *Locks) Context() context.Context { return l.h.ctx }

// Done is Context().Done().
func (l *Locks) Done() <-chan struct{} { return l.h.ctx.Done() }

// renewOnce renews every lock of the set, concurrently (over the RPC
// stream, when the client has one, they share a message). One refusal is
// the loss of the set.
func (l *Locks) renewOnce(ctx context.Context) (time.Duration, error) {
	type result struct {
		lease time.Duration
		err   error
	}
	res := make(chan result, len(l.resources))
	for _, r := range l.resources {
		go func() {
			g, err := l.c.renew(ctx, r, l.holder)
			if err != nil {
				err = fmt.Errorf("%q: %w", r, err)
			}
			res <- result{time.Duration(g.LeaseMs) * time.Millisecond, err}
		}()
	}
	var lease time.Duration
	var temporary, refused error
	for range l.resources {
		r := <-res
		switch {
		case r.err == nil:
			if lease == 0 || (r.lease > 0 && r.lease < lease) {
				lease = r.lease
			}
		case errorsIsTemporary(r.err):
			temporary = r.err
		default:
			refused = r.err
		}
	}
	if refused != nil {
		return 0, refused
	}
	return lease, temporary
}

// Unlock releases one hold of every lock of the set
// (POST /v1/locks/release-all); the watchdog stops and Context is
// cancelled with ErrUnlocked. When some were no longer this holder's (a
// lease was lost meanwhile), the others are still released, the error
// matches ErrNotOwner and names them, and Context is cancelled with
// ErrLeaseLost.
func (l *Locks) Unlock(ctx context.Context) error {
	in := wire.Request{Resources: &l.resources, Holder: &l.holder}
	var out wire.ReleasedAll
	if err := l.c.exchange(ctx, &op.ReleaseAll, "", in, &out, refusal{conflict: "not-owner"}); err != nil {
		if lostLease(err) {
			l.h.end(fmt.Errorf("%w: %w", ErrLeaseLost, err))
		}
		return err
	}
	if len(out.NotHeld) > 0 {
		err := fmt.Errorf("%w: %q not held by %q", ErrNotOwner, out.NotHeld, l.holder)
		l.h.end(fmt.Errorf("%w: %w", ErrLeaseLost, err))
		return err
	}
	l.h.end(ErrUnlocked)
	return nil
}
