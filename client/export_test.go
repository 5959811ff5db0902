package client

import (
	"context"
	"sync"
	"time"
)

// WatchdogEvents reports what m's watchdog does ("armed", "renewed",
// "retry", "lost"), so tests step a fake clock in lockstep with it instead
// of sleeping. Call it before the first grant.
func WatchdogEvents(m *Mutex) <-chan string {
	ch := make(chan string, 256)
	m.hook = func(e string) { ch <- e }
	return ch
}

// HoldEvents is WatchdogEvents for the permits, multi-locks and elections
// of c. Call it before the first grant.
func HoldEvents(c *Client) <-chan string {
	ch := make(chan string, 256)
	c.hook = func(e string) { ch <- e }
	return ch
}

// RecordWaits makes c record the waits before it sends a shed call again
// instead of sleeping, each with its largest jitter, and returns what it
// recorded so far.
func RecordWaits(c *Client) func() []time.Duration {
	var mu sync.Mutex
	var waits []time.Duration
	c.jitter = func(d time.Duration) time.Duration { return d }
	c.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return ctx.Err()
	}
	return func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Duration(nil), waits...)
	}
}

// Renew renews holder's lock on resource once, as the watchdog does.
func Renew(ctx context.Context, c *Client, resource, holder string) error {
	_, err := c.renew(ctx, resource, holder)
	return err
}
