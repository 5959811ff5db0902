package client

import (
	"container/heap"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fenceview/fenceview/guard"
)

// hold is one period of ownership of whatever a handle holds (a Mutex's
// lock, a semaphore's permit, a multi-lock's locks, an election's
// leadership), from the grant to the last release or the loss of the
// lease. Every kind shares the client's watchdog (scheduler); only
// renewOnce differs.
type hold struct {
	mu     *sync.Mutex // the owner's: guards cancel against the owner's reads
	ctx    context.Context
	cancel context.CancelCauseFunc
	lease  time.Duration
	renew  bool
	// renewOnce renews everything the hold holds, and returns the lease
	// the server granted (0: as asked).
	renewOnce func(ctx context.Context) (time.Duration, error)
	hook      func(event string) // tests: what the watchdog just did

	// Its schedule, guarded by the scheduler's mu.
	s        *scheduler
	index    int       // in the scheduler's heap, -1 when out of it
	at       time.Time // when the scheduler next looks at it
	leaseEnd time.Time // by the client's clock, from when the last granted request was sent
	lastErr  error     // of the last renewal, when it failed
	renewing context.CancelFunc
	renewed  chan struct{} // closed when the renewal in flight ends
	ended    bool

	// A Mutex's grant facts, guarded by mu.
	token   int64 // of the latest grant
	fencing guard.Token
	count   int
}

// interval is how often a hold is renewed: at a third of its lease.
func (h *hold) interval() time.Duration { return max(h.lease/3, time.Millisecond) }

// retry is how soon a failed renewal is tried again.
func (h *hold) retry() time.Duration {
	return min(max(h.lease/10, 10*time.Millisecond), h.interval())
}

// stopWatchdog takes h off the schedule and waits for a renewal in flight,
// which it cancels.
func (h *hold) stopWatchdog() {
	if h.s == nil {
		return
	}
	h.s.mu.Lock()
	h.s.remove(h)
	cancel, renewed := h.renewing, h.renewed
	h.s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-renewed
	}
}

// end ends the hold with cause and stops its renewals (a release, Close).
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

// lose ends h because its lease is gone; it is off the schedule after.
func (h *hold) lose(cause error) {
	h.mu.Lock()
	h.cancel(cause)
	h.mu.Unlock()
	h.event("lost")
	if h.s != nil {
		h.s.mu.Lock()
		h.s.remove(h)
		h.s.mu.Unlock()
	}
}

// newHold starts a hold granted at sent for lease, on the client's
// watchdog: it is renewed by renewOnce when renew is set, else only
// watched until the lease runs out. A hold granted while the client
// closed is ended at once with ErrClosed: nobody would renew it.
func (c *Client) newHold(mu *sync.Mutex, lease time.Duration, renew bool, sent time.Time, renewOnce func(context.Context) (time.Duration, error), hook func(string)) *hold {
	if hook == nil {
		hook = c.hook
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	h := &hold{mu: mu, ctx: ctx, cancel: cancel, lease: lease, renew: renew, renewOnce: renewOnce, hook: hook, index: -1}
	if c.life.watch(h) {
		c.sched.add(h, sent.Add(lease))
	} else {
		cancel(ErrClosed)
	}
	return h
}

// scheduler is the client's one watchdog: a heap of its holds by when each
// is next due (its renewal, or the end of its lease), and one goroutine,
// running while there are holds, that sleeps on one timer until the
// earliest. A renewal runs in a goroutine of its own while it is in
// flight; a hold waiting for its renewal costs no goroutine. Renewals are
// at a third of the lease, failed ones are retried more often, and a hold
// ends when a renewal is refused or its lease runs out (by the client's
// clock, counted from when the last successful request was sent, so the
// server's lease never outlives ours).
type scheduler struct {
	c *Client

	mu      sync.Mutex
	holds   holdHeap
	running bool          // the loop runs (it stops when holds is empty)
	wake    chan struct{} // one token: the heap's earliest changed
	// armed are holds whose new time the loop has yet to arm its timer
	// for; it then tells their hooks "armed" (tests step the clock after).
	armed []*hold
	loops sync.WaitGroup // the loop and the renewals in flight
}

func newScheduler(c *Client) *scheduler {
	return &scheduler{c: c, wake: make(chan struct{}, 1)}
}

// add schedules h, granted until leaseEnd.
func (s *scheduler) add(h *hold, leaseEnd time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h.s, h.leaseEnd = s, leaseEnd
	h.at = leaseEnd
	if h.renew {
		h.at = earliest(s.c.clock.Now().Add(h.interval()), leaseEnd)
	}
	heap.Push(&s.holds, h)
	s.arm(h)
	if !s.running {
		s.running = true
		s.loops.Add(1)
		go s.loop()
	}
}

// arm asks the loop to arm its timer for h's new time. s.mu is held.
func (s *scheduler) arm(h *hold) {
	if h.hook != nil {
		s.armed = append(s.armed, h)
	}
	s.kick()
}

// kick wakes the loop to look at the heap again.
func (s *scheduler) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// remove takes h off the schedule for good. s.mu is held.
func (s *scheduler) remove(h *hold) {
	if !h.ended {
		h.ended = true
		s.c.life.forget(h)
	}
	if h.index >= 0 {
		heap.Remove(&s.holds, h.index)
		s.kick() // the loop may have nothing left to wait for
	}
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// loop acts on every hold that is due, then sleeps until the next one is
// or the heap changes; it ends when no hold is left.
func (s *scheduler) loop() {
	defer s.loops.Done()
	clk := s.c.clock
	for {
		s.mu.Lock()
		now := clk.Now()
		var lost []lostHold
		for len(s.holds) > 0 && !s.holds[0].at.After(now) {
			h := s.holds[0]
			switch {
			case !now.Before(h.leaseEnd):
				s.remove(h)
				lost = append(lost, lostHold{h, h.renewing, leaseOver(h.renew, h.lastErr)})
			case h.renew && h.renewing == nil:
				s.startRenewal(h, now)
			default: // a renewal in flight: look again at the lease's end
				h.at = h.leaseEnd
				heap.Fix(&s.holds, h.index)
			}
		}
		armed := s.armed
		s.armed = nil
		if len(s.holds) == 0 {
			s.running = false
			s.mu.Unlock()
			s.lose(lost)
			return
		}
		t := clk.NewTimer(s.holds[0].at.Sub(now))
		s.mu.Unlock()
		s.lose(lost)
		for _, h := range armed {
			h.event("armed")
		}
		select {
		case <-t.C():
		case <-s.wake:
			t.Stop()
		}
	}
}

// lostHold is a hold whose lease ran out, with the renewal in flight
// (whose answer comes too late) and why.
type lostHold struct {
	h      *hold
	cancel context.CancelFunc
	cause  error
}

// lose ends the holds whose lease ran out.
func (s *scheduler) lose(lost []lostHold) {
	for _, l := range lost {
		if l.cancel != nil {
			l.cancel()
		}
		l.h.lose(l.cause)
	}
}

// startRenewal sends h's renewal, which may take until the end of its
// lease and at most an interval: a hung request must not hold up the next
// attempt, which gets a fresh connection. s.mu is held.
func (s *scheduler) startRenewal(h *hold, sent time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), h.interval())
	h.renewing, h.renewed = cancel, make(chan struct{})
	h.at = h.leaseEnd
	heap.Fix(&s.holds, h.index)
	s.loops.Add(1)
	go func() {
		defer s.loops.Done()
		lease, err := h.renewOnce(ctx)
		cancel()
		s.renewed(h, sent, lease, err)
	}()
}

// renewed schedules h after its renewal sent at sent answered.
func (s *scheduler) renewed(h *hold, sent time.Time, lease time.Duration, err error) {
	s.mu.Lock()
	close(h.renewed)
	h.renewing, h.renewed = nil, nil
	if h.ended {
		s.mu.Unlock()
		return
	}
	now := s.c.clock.Now()
	switch {
	case err == nil:
		if lease <= 0 {
			lease = h.lease
		}
		h.leaseEnd, h.lastErr = sent.Add(lease), nil
		h.at = earliest(now.Add(h.interval()), h.leaseEnd)
		h.event("renewed") // before the loop says "armed"
	case !errorsIsTemporary(err):
		s.remove(h)
		s.mu.Unlock()
		h.lose(fmt.Errorf("%w: renewal refused: %w", ErrLeaseLost, err))
		return
	default:
		h.lastErr = err
		h.at = earliest(now.Add(h.retry()), h.leaseEnd)
		h.event("retry")
	}
	heap.Fix(&s.holds, h.index)
	s.arm(h)
	s.mu.Unlock()
}

// wait waits for the loop and the renewals in flight to end, once every
// hold is off the schedule (Client.Close).
func (s *scheduler) wait() { s.loops.Wait() }

// holdHeap orders holds by when they are next due.
type holdHeap []*hold

func (q holdHeap) Len() int           { return len(q) }
func (q holdHeap) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q holdHeap) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}
func (q *holdHeap) Push(x any) {
	h := x.(*hold)
	h.index = len(*q)
	*q = append(*q, h)
}
func (q *holdHeap) Pop() any {
	old := *q
	h := old[len(old)-1]
	old[len(old)-1] = nil
	h.index = -1
	*q = old[:len(old)-1]
	return h
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
