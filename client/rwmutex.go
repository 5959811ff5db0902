package client

import (
	"context"
	"time"
)

// RWMutex is a fenced read-write lock on one resource for one holder, the
// shape of sync.RWMutex (and of Redisson's RReadWriteLock, etcd's
// recipes.RWMutex), with fencing tokens for the readers too: every reader
// of one read phase holds the phase's token, every writer's token is above
// every earlier reader's and the reverse. So a guard that checks reads as
// well as writes (X-Fencing-Access: read) fences out a writer whose lease
// ran out once a later reader has read, and a reader whose phase ended
// once a later writer has written.
//
// The server admits first come, first served: RLock is granted while no
// writer holds the lock and none waits ahead of it, Lock once every reader
// before it has left; writers never starve. Each hold has its own lease,
// renewed by a watchdog as Mutex's is, and its own Context.
//
// A holder cannot convert one mode into the other: Lock while holding
// RLock (or RLock while holding Lock) is refused at once with a
// *HeldError, as it would otherwise wait for itself. Use one RWMutex per
// holder and resource; its methods are safe for concurrent use.
type RWMutex struct {
	r, w *Mutex
}

// RWMutex returns the read-write lock on resource for holder; opts apply
// to both modes.
func (c *Client) RWMutex(resource, holder string, opts ...LockOption) *RWMutex {
	w := c.Mutex(resource, holder, opts...)
	r := c.Mutex(resource, holder, opts...)
	r.shared = true
	return &RWMutex{r: r, w: w}
}

// RLock blocks until a shared hold is granted or ctx is done, and returns
// the read phase's token (Mutex.Lock's rules, in shared mode). A second
// RLock is a re-entrant hold with the same token.
func (rw *RWMutex) RLock(ctx context.Context) (int64, error) { return rw.r.Lock(ctx) }

// TryRLock is Mutex.TryLock in shared mode.
func (rw *RWMutex) TryRLock(ctx context.Context, wait, lease time.Duration) (int64, error) {
	return rw.r.TryLock(ctx, wait, lease)
}

// RUnlock releases one shared hold (Mutex.Unlock's rules).
func (rw *RWMutex) RUnlock(ctx context.Context) error { return rw.r.Unlock(ctx) }

// Lock blocks until the exclusive hold is granted or ctx is done, and
// returns its token (Mutex.Lock).
func (rw *RWMutex) Lock(ctx context.Context) (int64, error) { return rw.w.Lock(ctx) }

// TryLock is Mutex.TryLock.
func (rw *RWMutex) TryLock(ctx context.Context, wait, lease time.Duration) (int64, error) {
	return rw.w.TryLock(ctx, wait, lease)
}

// Unlock releases one exclusive hold (Mutex.Unlock).
func (rw *RWMutex) Unlock(ctx context.Context) error { return rw.w.Unlock(ctx) }

// Reader is the shared half: its Token (Shared set), Fencing, Context and
// Done describe the current read hold.
func (rw *RWMutex) Reader() *Mutex { return rw.r }

// Writer is the exclusive half, a Mutex of its own.
func (rw *RWMutex) Writer() *Mutex { return rw.w }

// State returns the lock's state on the server; State.Holders lists the
// readers of a live read phase.
func (rw *RWMutex) State(ctx context.Context) (State, error) { return rw.w.State(ctx) }
