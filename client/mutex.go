package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/wire"
)

// maxWaitChunk bounds one server-side wait of a blocking Lock: long enough
// to be cheap, short enough for proxies that cut idle requests.
const maxWaitChunk = 60 * time.Second

// Mutex is a fenced lock on one resource for one holder, like Redisson's
// RFencedLock or etcd's concurrency.Mutex. Use one Mutex per holder and
// resource; its methods are safe for concurrent use.
type Mutex struct {
	c         *Client
	resource  string
	holder    string
	lockDelay time.Duration
	bad       error // of an option, returned by every call
	shared    bool  // its holds are shared ones (RWMutex.Reader)

	mu   sync.Mutex
	hold *hold // the current or last hold; nil before the first grant

	hook func(event string) // tests: what the watchdog just did
}

// Mutex returns the lock on resource for holder. Ids are checked when used:
// resource 1..160 bytes, holder 1..80 bytes, UTF-8 without control
// characters.
func (c *Client) Mutex(resource, holder string, opts ...LockOption) *Mutex {
	o := lockOptions(opts)
	return &Mutex{c: c, resource: resource, holder: holder, lockDelay: o.lockDelay, bad: o.err}
}

// LockOption configures a Mutex, a Semaphore or a MultiLock.
type LockOption func(*lockSettings)

type lockSettings struct {
	lockDelay time.Duration
	err       error
}

func lockOptions(opts []LockOption) lockSettings {
	var s lockSettings
	for _, o := range opts {
		o(&s)
	}
	return s
}

// WithLockDelay asks for a lock-delay (Chubby's, Consul's) on every grant:
// when a lease granted with it runs out without a release (its holder
// vanished or stalled), nobody, this holder included, gets the lock until
// the lease's end plus d, so that a write still in flight from the
// vanished holder to a resource that cannot check tokens has time to land
// or die. Acquires meanwhile are refused with a *LockDelayError (or wait,
// when they may). Unlock frees the lock at once, as does a force-expire.
// d is 0..60s, whole milliseconds.
func WithLockDelay(d time.Duration) LockOption {
	return func(s *lockSettings) {
		if d < 0 || d > maxLockDelay || d%time.Millisecond != 0 {
			s.err = invalid(fmt.Errorf("lock-delay %v: want 0..%v in whole milliseconds", d, maxLockDelay))
			return
		}
		s.lockDelay = d
	}
}

// maxLockDelay is the contract's bound (fenceview.MaxLockDelay).
const maxLockDelay = 60 * time.Second

// Resource returns the resource id.
func (m *Mutex) Resource() string { return m.resource }

// Holder returns the holder id.
func (m *Mutex) Holder() string { return m.holder }

func (m *Mutex) validate() error {
	if m.bad != nil {
		return m.bad
	}
	if err := guard.ValidateResourceID(m.resource); err != nil {
		return invalid(err)
	}
	if err := guard.ValidateHolderID(m.holder); err != nil {
		return invalid(err)
	}
	return nil
}

// Lock blocks until the lock is granted or ctx is done, and returns the
// grant's fencing token. The lease (Config.Lease, default 30s) is renewed by a
// watchdog at a third of the lease until the last Unlock; Context is
// cancelled when the lease is lost.
//
// Waiting happens on the server, which serves waiters first come first
// served, in chunks of up to a minute (each chunk rejoins the queue). When
// ctx has a deadline, the last wait ends a little before it, so the server
// answers before the client gives up.
//
// A lock in its lock-delay (WithLockDelay) is waited for as a held one.
//
// Calling Lock while holding the lock is a re-entrant grant with a new,
// larger token: see the package doc.
func (m *Mutex) Lock(ctx context.Context) (int64, error) {
	if err := m.validate(); err != nil {
		return 0, err
	}
	for {
		wait := maxWaitChunk
		if dl, ok := ctx.Deadline(); ok {
			left := time.Until(dl)
			wait = min(wait, left-min(left/10, time.Second))
		}
		sent := m.c.clock.Now()
		g, err := m.c.acquire(ctx, m.resource, m.holder, m.c.lease, max(wait, 0), m.lockDelay, m.shared)
		if err == nil {
			return m.granted(g, m.c.lease, true, sent), nil
		}
		if !(errors.Is(err, ErrHeld) || errors.Is(err, ErrLockDelay)) || wait <= 0 {
			return 0, err
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
	}
}

// TryLock asks for the lock, waiting on the server up to wait (0: do not
// wait), and returns the token, or a *HeldError (errors.Is(err, ErrHeld))
// when the lock stayed held, or a *LockDelayError (errors.Is(err,
// ErrLockDelay)) when it is in its lock-delay.
//
// With lease 0 the lock has the default lease and the watchdog renews it,
// as with Lock. With lease > 0 it is held for exactly that long, not
// renewed (Redisson's leaseTime): Context is cancelled when the lease
// ends, measured from when the request was sent.
func (m *Mutex) TryLock(ctx context.Context, wait, lease time.Duration) (int64, error) {
	if err := m.validate(); err != nil {
		return 0, err
	}
	if wait < 0 || lease < 0 {
		return 0, invalid(fmt.Errorf("negative wait (%v) or lease (%v)", wait, lease))
	}
	renew := lease == 0
	if renew {
		lease = m.c.lease
	}
	sent := m.c.clock.Now()
	g, err := m.c.acquire(ctx, m.resource, m.holder, lease, wait, m.lockDelay, m.shared)
	if err != nil {
		return 0, err
	}
	return m.granted(g, lease, renew, sent), nil
}

// granted records a grant: a new hold with its watchdog, or one more
// re-entrant grant of the current hold.
func (m *Mutex) granted(g wire.Grant, lease time.Duration, renew bool, sent time.Time) int64 {
	if g.LeaseMs > 0 {
		lease = time.Duration(g.LeaseMs) * time.Millisecond
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.hold
	if h == nil || h.ctx.Err() != nil {
		h = m.c.newHold(&m.mu, lease, renew, sent, m.renewOnce, m.event)
		m.hold = h
	}
	h.token, h.fencing, h.count = g.Fencing.Token, g.Fencing.GuardToken(), g.HoldCount
	return g.Fencing.Token
}

// Unlock releases one hold. At the last one the watchdog stops and Context
// is cancelled with cause ErrUnlocked. When the server says this holder is
// not the owner (the lease was lost meanwhile), the error matches
// ErrLeaseExpired (the lease ran out or was force-expired), ErrNotOwner
// (another holds the lock) or ErrNotHeld (nobody does), and Context is
// cancelled with ErrLeaseLost.
func (m *Mutex) Unlock(ctx context.Context) error {
	if err := m.validate(); err != nil {
		return err
	}
	m.mu.Lock()
	h := m.hold
	m.mu.Unlock()
	left, err := m.c.release(ctx, m.resource, m.holder)
	var end error
	switch {
	case lostLease(err):
		end = fmt.Errorf("%w: %w", ErrLeaseLost, err)
	case err != nil:
		return err
	case left == 0:
		end = ErrUnlocked
	}
	if h == nil {
		return err
	}
	m.mu.Lock()
	if end == nil {
		h.count = left
		m.mu.Unlock()
		return nil
	}
	h.cancel(end)
	m.mu.Unlock()
	h.stopWatchdog()
	return err
}

// State returns the lock's state on the server.
func (m *Mutex) State(ctx context.Context) (State, error) {
	return m.c.State(ctx, m.resource)
}

// Context returns a context that is cancelled when the current hold ends:
// with cause ErrLeaseLost when the lease was lost (context.Cause tells
// why), ErrUnlocked after the last Unlock. Run the work done under the lock
// with it so that it stops when the lock is no longer yours. Before the
// first grant it is already cancelled.
func (m *Mutex) Context() context.Context { return contextOf(&m.mu, &m.hold) }

// Done is Context().Done().
func (m *Mutex) Done() <-chan struct{} { return m.Context().Done() }

// Fencing returns the token envelope (token, issuer, scope, issue time) of
// the latest grant, the zero Token when not held; for Client.FenceToken and
// guards that check issuer and scope.
func (m *Mutex) Fencing() guard.Token {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hold == nil || m.hold.ctx.Err() != nil {
		return guard.Token{}
	}
	return m.hold.fencing
}

// contextOf is the context of the hold *h, read under its owner's mu:
// notHeld before the first.
func contextOf(mu *sync.Mutex, h **hold) context.Context {
	mu.Lock()
	defer mu.Unlock()
	if *h == nil {
		return notHeld
	}
	return (*h).ctx
}

var notHeld = func() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("fenceview: lock never granted to this Mutex"))
	return ctx
}()

func (m *Mutex) event(e string) {
	if m.hook != nil {
		m.hook(e)
	}
}

// renewOnce is one renewal of the watchdog.
func (m *Mutex) renewOnce(ctx context.Context) (time.Duration, error) {
	g, err := m.c.renew(ctx, m.resource, m.holder)
	return time.Duration(g.LeaseMs) * time.Millisecond, err
}
