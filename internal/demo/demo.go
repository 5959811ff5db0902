// Package demo runs simulated clients against a lock service, so a new
// user who starts `fenceview --demo` sees a living dashboard at once: locks
// changing hands, fenced writes accepted, a waiter queueing, a plugin
// reporting decisions, and the story fencing exists for, a client that
// pauses past its lease and is fenced out when it wakes up.
package demo

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
)

// Locks is what the simulated clients call: the lock service, and the
// fences their writes go through (issuer.Service implements both).
type Locks interface {
	fenceview.LockService
	fenceview.FenceService
}

// Config tunes the simulation.
type Config struct {
	Logger *slog.Logger
	// Speed divides every lease and pause: 1 is a pace a person can watch;
	// tests run much faster.
	Speed float64
	Seed  uint64
}

// Resources the simulated clients use. One id needs URL escaping, to show
// that it works.
const (
	Orders    = "orders/eu-west"
	Inventory = "inventory:sku-7"
	Reports   = "reports/daily"
	Ledger    = "ledger/acme corp"
)

// Sim is a running simulation.
type Sim struct {
	l      Locks
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start starts the simulated clients in the background.
func Start(l Locks, cfg Config) *Sim {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Speed <= 0 {
		cfg.Speed = 1
	}
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano())
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sim{l: l, cancel: cancel}
	handover := make(chan int64, 1)
	clients := []func(*client){
		func(c *client) { c.worker(Orders, "billing-1") },
		func(c *client) { c.worker(Orders, "billing-2") },
		func(c *client) { c.paused(handover) },
		func(c *client) { c.standby(handover) },
		func(c *client) { c.scheduler() },
		func(c *client) { c.plugin() },
	}
	for i, run := range clients {
		c := &client{ctx: ctx, l: l, log: cfg.Logger, speed: cfg.Speed, rnd: rand.New(rand.NewPCG(cfg.Seed, uint64(i)))}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			run(c)
		}()
	}
	return s
}

// Stop ends the simulation, waits for every client to return, and gives
// up the locks they held, so the next demo starts from free locks rather
// than re-entering a stale hold.
func (s *Sim) Stop() {
	s.cancel()
	s.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, h := range holders {
		for i := 0; i < 16; i++ {
			if _, err := s.l.Release(ctx, h.resource, h.holder); err != nil {
				break // not (or no longer) the owner
			}
		}
	}
}

// holders are every resource and holder the clients use.
var holders = []struct{ resource, holder string }{
	{Orders, "billing-1"}, {Orders, "billing-2"}, {Inventory, "indexer-a"}, {Inventory, "indexer-b"},
	{Reports, "scheduler"}, {Ledger, "ledger-writer"},
}

type client struct {
	ctx   context.Context
	l     Locks
	log   *slog.Logger
	speed float64
	rnd   *rand.Rand
}

// d scales a duration to the simulation's speed.
func (c *client) d(d time.Duration) time.Duration {
	return max(time.Duration(float64(d)/c.speed), time.Millisecond)
}

// sleep waits about d (jitter ±25%); false when the simulation stops.
func (c *client) sleep(d time.Duration) bool {
	d = time.Duration(float64(d) * (0.75 + c.rnd.Float64()/2))
	t := time.NewTimer(c.d(d))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
		return false
	}
}

func (c *client) done() bool { return c.ctx.Err() != nil }

// failed logs an unexpected error; refusals are part of the show.
func (c *client) failed(what string, err error) {
	if err != nil && !errors.Is(err, context.Canceled) && !fenceview.IsRefusal(err) && !c.done() {
		c.log.Warn("demo client", "step", what, "err", err)
	}
}

// take acquires resource for holder (lease and wait as c.d scales them),
// noting a failure; ok is false when there is no grant this round.
func (c *client) take(resource, holder string, lease, wait time.Duration) (g fenceview.Grant, ok bool) {
	g, err := c.l.Acquire(c.ctx, fenceview.AcquireRequest{ResourceID: resource, Holder: holder, Lease: c.d(lease), Wait: c.d(wait)})
	if err != nil {
		c.failed("acquire", err)
		return g, false
	}
	return g, true
}

// give releases resource, unless the demo is stopping: then it reports
// false and the client ends.
func (c *client) give(resource, holder string) bool {
	if c.done() {
		return false
	}
	_, err := c.l.Release(c.ctx, resource, holder)
	c.failed("release", err)
	return true
}

// write presents the grant's token with its signature, as a real client
// does, so the demo also runs against --require-signatures.
func (c *client) write(resource, holder string, f guard.Token) bool {
	d, err := c.l.Fence(c.ctx, fenceview.Fence{
		ResourceID: resource, Token: guard.Token{Token: f.Token, Signature: f.Signature}, Holder: holder, Source: "demo:" + holder,
	})
	c.failed("fence", err)
	return err == nil && d.Accepted
}

// worker takes turns with another worker on a resource: acquire (queueing
// if needed), a few writes, a renewal, release.
func (c *client) worker(resource, holder string) {
	for c.sleep(1500 * time.Millisecond) {
		g, ok := c.take(resource, holder, 10*time.Second, 15*time.Second)
		if !ok {
			continue
		}
		writes := 2 + c.rnd.IntN(3)
		for i := 0; i < writes && c.sleep(1200*time.Millisecond); i++ {
			c.write(resource, holder, g.Fencing)
			if i == 1 {
				_, err := c.l.Renew(c.ctx, resource, holder, 0)
				c.failed("renew", err)
			}
		}
		if !c.give(resource, holder) {
			return
		}
	}
}

// paused is the client fencing exists for: it takes the lock, writes, then
// stalls (a long GC pause, a frozen VM) past its lease. The standby takes
// over; when this one wakes it writes with its old token and is refused.
func (c *client) paused(handover <-chan int64) {
	const holder = "indexer-a"
	for c.sleep(4 * time.Second) {
		g, ok := c.take(Inventory, holder, 4*time.Second, 20*time.Second)
		if !ok {
			continue
		}
		c.write(Inventory, holder, g.Fencing)
		// The pause lasts until the standby has written with its newer
		// token, so the refusal happens every round, not by chance.
		for waiting := true; waiting; {
			select {
			case tok := <-handover:
				waiting = tok <= g.Fencing.Token // an old round's news
			case <-c.ctx.Done():
				return
			}
		}
		if !c.write(Inventory, holder, g.Fencing) {
			c.log.Debug("demo: paused client fenced out", "resource", Inventory, "token", g.Fencing.Token)
		}
		c.sleep(15 * time.Second)
	}
}

// standby waits for the paused client's lock, writes, and tells it so.
func (c *client) standby(handover chan int64) {
	const holder = "indexer-b"
	for c.sleep(2 * time.Second) {
		g, ok := c.take(Inventory, holder, 6*time.Second, 30*time.Second)
		if !ok {
			continue
		}
		c.sleep(400 * time.Millisecond)
		c.write(Inventory, holder, g.Fencing)
		select { // replace news the paused client never read
		case <-handover:
		default:
		}
		handover <- g.Fencing.Token // the only sender: never blocks
		c.sleep(1500 * time.Millisecond)
		if !c.give(Inventory, holder) {
			return
		}
		c.sleep(12 * time.Second)
	}
}

// scheduler holds a long lease and renews it, so a countdown is always
// ticking somewhere.
func (c *client) scheduler() {
	const holder = "scheduler"
	for c.sleep(time.Second) {
		g, ok := c.take(Reports, holder, 25*time.Second, 30*time.Second)
		if !ok {
			continue
		}
		for i := 0; i < 4 && c.sleep(9*time.Second); i++ {
			c.write(Reports, holder, g.Fencing)
			_, err := c.l.Renew(c.ctx, Reports, holder, 0)
			c.failed("renew", err)
		}
		if !c.give(Reports, holder) {
			return
		}
	}
}

// plugin is a database-side guard reporting its decisions, now and then
// refusing a late replica's write.
func (c *client) plugin() {
	const holder = "ledger-writer"
	for c.sleep(3 * time.Second) {
		g, ok := c.take(Ledger, holder, 8*time.Second, 10*time.Second)
		if !ok {
			continue
		}
		tok := g.Fencing.Token
		reports := []fenceview.Report{{ResourceID: Ledger, Token: tok, Accepted: true, Source: "plugin:postgres"}}
		if tok > 1 && c.rnd.IntN(12) == 0 {
			reports = append(reports, fenceview.Report{ResourceID: Ledger, Token: tok - 1, Required: tok,
				Reason: guard.ReasonStale, Source: "plugin:postgres-replica"})
		}
		_, err := c.l.Report(c.ctx, reports)
		c.failed("report", err)
		c.sleep(2 * time.Second)
		if !c.give(Ledger, holder) {
			return
		}
	}
}
