package client

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fenceview/fenceview/guard"
)

// hold is one period of ownership of whatever a handle holds (a Mutex's
// lock, a semaphore's permit, a multi-lock's locks, an election's
// leadership), from the grant to the last release or the loss of the
// lease. Every kind shares this watchdog; only renewOnce differs.
type hold struct {
	mu     *sync.Mutex // the owner's: guards cancel against the owner's reads
	ctx    context.Context
	cancel context.CancelCauseFunc
	stop   chan struct{} // closed by the owner's release: the watchdog exits
	done   chan struct{} // closed when the watchdog has exited
	once   sync.Once
	lease  time.Duration
	renew  bool
	// renewOnce renews everything the hold holds, and returns the lease
	// the server granted (0: as asked).
	renewOnce func(ctx context.Context) (time.Duration, error)
	hook      func(event string) // tests: what the watchdog just did

	// A Mutex's grant facts, guarded by mu.
	token   int64 // of the latest grant
	fencing guard.Token
	count   int
}

func (h *hold) stopWatchdog() {
	h.once.Do(func() { close(h.stop) })
	<-h.done
}

// end ends the hold with cause and waits for its watchdog (Client.Close).
func (h *hold) end(cause error) {
	h.mu.Lock()
	h.cancel(cause)
	h.mu.Unlock()
	h.stopWatchdog()
}

func (h *hold) event(e string) {
	if h.hook != nil {
		h.hook(e)
	}
}

// lose ends h because its lease is gone.
func (h *hold) lose(cause error) {
	h.mu.Lock()
	h.cancel(cause)
	h.mu.Unlock()
	h.event("lost")
}

// newHold starts a hold granted at sent for lease, and its watchdog: it
// renews by renewOnce when renew is set, else only waits for the lease to
// run out. A hold granted while the client closed is ended at once with
// ErrClosed: nobody would renew it.
func (c *Client) newHold(mu *sync.Mutex, lease time.Duration, renew bool, sent time.Time, renewOnce func(context.Context) (time.Duration, error), hook func(string)) *hold {
	if hook == nil {
		hook = c.hook
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	h := &hold{mu: mu, ctx: ctx, cancel: cancel, stop: make(chan struct{}), done: make(chan struct{}),
		lease: lease, renew: renew, renewOnce: renewOnce, hook: hook}
	if c.life.watch(h) {
		go c.watchdog(h, sent.Add(lease))
	} else {
		cancel(ErrClosed)
		close(h.done)
	}
	return h
}

type renewal struct {
	lease time.Duration
	err   error
}

// watchdog keeps h's lease alive: it renews at a third of the lease, retries
// failed renewals more often, and ends the hold when a renewal is refused or
// the lease runs out (by the client's clock, counted from when the last
// successful request was sent, so the server's lease never outlives ours).
// For a fixed lease it only waits for the lease to run out.
func (c *Client) watchdog(h *hold, leaseEnd time.Time) {
	defer close(h.done)
	defer c.life.forget(h)
	clk := c.clock
	interval := max(h.lease/3, time.Millisecond)
	retry := min(max(h.lease/10, 10*time.Millisecond), interval)
	next := interval
	var lastErr error
	for {
		now := clk.Now()
		wait := leaseEnd.Sub(now)
		if h.renew {
			wait = min(wait, next)
		}
		t := clk.NewTimer(wait)
		h.event("armed")
		select {
		case <-h.stop:
			t.Stop()
			return
		case <-t.C():
		}
		if !clk.Now().Before(leaseEnd) {
			h.lose(leaseOver(h.renew, lastErr))
			return
		}

		sent := clk.Now()
		// A hung request must not outlive the renewal interval: the next
		// attempt gets a fresh connection.
		rctx, cancel := context.WithTimeout(context.Background(), interval)
		res := make(chan renewal, 1)
		go func() {
			lease, err := h.renewOnce(rctx)
			res <- renewal{lease, err}
		}()
		end := clk.NewTimer(leaseEnd.Sub(sent))
		var r renewal
		select {
		case <-h.stop:
			cancel()
			end.Stop()
			<-res // the renewal ends with the watchdog
			return
		case <-end.C():
			cancel()
			<-res
			h.lose(leaseOver(true, lastErr))
			return
		case r = <-res:
		}
		end.Stop()
		cancel()
		switch {
		case r.err == nil:
			lease := h.lease
			if r.lease > 0 {
				lease = r.lease
			}
			leaseEnd = sent.Add(lease)
			lastErr, next = nil, interval
			h.event("renewed")
		case !errorsIsTemporary(r.err):
			h.lose(fmt.Errorf("%w: renewal refused: %w", ErrLeaseLost, r.err))
			return
		default:
			lastErr, next = r.err, retry
			h.event("retry")
		}
	}
}

func leaseOver(renewing bool, lastErr error) error {
	switch {
	case !renewing:
		return fmt.Errorf("%w: the fixed lease ran out", ErrLeaseLost)
	case lastErr != nil:
		return fmt.Errorf("%w: server unreachable until the lease ran out: %w", ErrLeaseLost, lastErr)
	default:
		return fmt.Errorf("%w: no renewal answered before the lease ran out", ErrLeaseLost)
	}
}
