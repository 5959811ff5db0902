// Package fair shares the server's capacity between its callers when it is
// busy, after Kubernetes' API Priority and Fairness: each request belongs
// to a flow (one credential, or one client address with auth off) and a
// priority level; a fixed number of seats serve requests at once; the
// lease-keeping level goes first and has seats of its own, so a live
// holder's renew is never stuck behind someone else's acquires; and within
// a level the busy flows are served by fair queuing on cost (start-time
// fair queuing: each flow's next request is tagged with the virtual time at
// which it would start if every busy flow were served in turn, and the
// smallest tag goes first). A flow's queue is bounded, and so are all
// queues together: beyond them a request is shed at once with a time to
// retry after, so memory stays bounded whatever a storm sends.
package fair

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"
)

// Priority is a request's level: Lease before New.
type Priority uint8

const (
	// Lease is the keeping of leases already held: renew, release, an
	// election's renew and resign.
	Lease Priority = iota
	// New is everything else admitted: acquires, fences, reports, reads.
	New
	levels
)

func (p Priority) String() string {
	if p == Lease {
		return "lease"
	}
	return "new"
}

// Config bounds a Dispatcher; zero fields take the defaults of Defaults.
type Config struct {
	// Seats is how many requests are served at once.
	Seats int
	// LeaseSeats, of Seats, are kept for the Lease level: New requests
	// use at most Seats-LeaseSeats.
	LeaseSeats int
	// FlowSeats bounds the seats one flow holds at a level while other
	// flows have requests there too. Seats are many so that the group
	// commit has many changes to share an fsync; but a seat of cheap
	// requests (refusals, reads) is mostly processor time, and a flow
	// holding many of them takes it from everyone else's requests,
	// including their reading and answering, outside any seat.
	FlowSeats int
	// FlowQueue bounds the requests one flow has queued at one level.
	FlowQueue int
	// TotalQueue bounds the requests queued at all.
	TotalQueue int
	// MaxWait sheds a New request whose expected wait in the queue is
	// longer: it is better answered at once than late.
	MaxWait time.Duration
	// FlowRate is the least rate, in requests per second, at which a
	// flow's new requests are let through while the server is contended
	// and other flows are active (Pacer); a flow busier than the others
	// is held back to a quarter above the busiest other's rate, or to
	// this one. Negative: no pacing.
	FlowRate float64
	// Now is the clock of the queue waits and service times (default
	// time.Now).
	Now func() time.Time
}

// Defaults derives the bounds from the machine: a few seats per processor
// (a seat is mostly waiting for the group commit, not computing), one
// flow's queue a multiple of the seats, and the total enough for a few
// dozen busy flows.
func Defaults() Config {
	procs := runtime.GOMAXPROCS(0)
	seats := 32 * procs
	return Config{
		Seats:      seats,
		LeaseSeats: max(2, seats/4),
		FlowSeats:  max(2, procs),
		FlowQueue:  4 * seats,
		TotalQueue: 64 * seats,
		MaxWait:    2 * time.Second,
		FlowRate:   float64(250 * procs),
		Now:        time.Now,
	}
}

func (c Config) withDefaults() Config {
	d := Defaults()
	if c.Seats <= 0 {
		c.Seats = d.Seats
	}
	if c.LeaseSeats <= 0 {
		c.LeaseSeats = max(1, c.Seats/4)
	}
	c.LeaseSeats = min(c.LeaseSeats, c.Seats-1) // New keeps a seat
	if c.FlowSeats <= 0 {
		c.FlowSeats = c.Seats
	}
	if c.FlowQueue <= 0 {
		c.FlowQueue = d.FlowQueue
	}
	if c.TotalQueue <= 0 {
		c.TotalQueue = max(d.TotalQueue, c.FlowQueue)
	}
	if c.MaxWait <= 0 {
		c.MaxWait = d.MaxWait
	}
	if c.FlowRate == 0 {
		c.FlowRate = d.FlowRate
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Shed is the refusal of a request the dispatcher did not queue, or took
// out of its queue: nothing of it was done.
type Shed struct {
	Reason     string        // "queue-full", "total-full", "evicted" or "wait"
	RetryAfter time.Duration // when a retry is likely to be served
}

func (e *Shed) Error() string {
	return fmt.Sprintf("overloaded (%s); retry after %v", e.Reason, e.RetryAfter)
}

// Retry-After bounds: a shed client does not come back at once, nor wait
// longer than the longest queue could take.
const (
	minRetryAfter = 100 * time.Millisecond
	maxRetryAfter = 10 * time.Second
)

// Dispatcher admits requests to seats.
type Dispatcher struct {
	cfg Config

	mu      sync.Mutex
	levels  [levels]level
	inUse   int           // seats taken, both levels
	inNew   int           // seats taken by the New level
	queued  int           // requests queued, both levels
	service time.Duration // moving average of how long a request holds its seat
	waited  time.Time     // when a request last had to queue
	told    []*waiter     // waiters with then, woken, to be told outside mu (unlock)
	telling bool          // a goroutine is telling them
}

// level is one priority level's flows and virtual clock.
type level struct {
	flows map[string]*flow // flows with requests queued or in service
	busy  []*flow          // flows with requests queued
	vtime float64          // the start tag of the request served last
}

// flow is one caller's requests at one level.
type flow struct {
	d        *Dispatcher
	key      string
	queue    []*waiter // FIFO
	head     float64   // start tag of queue[0]
	finish   float64   // finish tag of the flow's last request served
	inFlight int
}

// waiter is a queued request.
type waiter struct {
	cost     int
	pri      Priority
	f        *flow
	ready    chan struct{} // closed when granted or shed (Acquire)
	then     Then          // told instead (AcquireThen)
	granted  bool
	shed     *Shed
	enqueued time.Time
}

// NewDispatcher returns a dispatcher with cfg's bounds.
func NewDispatcher(cfg Config) *Dispatcher {
	d := &Dispatcher{cfg: cfg.withDefaults()}
	for i := range d.levels {
		d.levels[i].flows = map[string]*flow{}
	}
	return d
}

// Config is the dispatcher's bounds, defaults filled in.
func (d *Dispatcher) Config() Config { return d.cfg }

// Ticket is a seat held by an admitted request; Done gives it back.
type Ticket struct {
	d      *Dispatcher
	pri    Priority
	f      *flow
	cost   int
	start  time.Time
	waited time.Duration
	done   bool
}

// Waited is how long the request waited in the queue.
func (t *Ticket) Waited() time.Duration { return t.waited }

// Acquire waits for a seat for a request of flow key at priority pri,
// estimated to cost cost (at least 1), and returns its ticket, or a *Shed
// at once when the queues are full or the wait would be too long, or
// ctx's error when it ends first.
func (d *Dispatcher) Acquire(ctx context.Context, key string, pri Priority, cost int) (*Ticket, error) {
	t, w, err := d.enter(key, pri, cost, nil)
	if t != nil || err != nil {
		return t, err
	}
	select {
	case <-w.ready:
	case <-ctx.Done():
		d.mu.Lock()
		if !w.granted && w.shed == nil {
			d.remove(pri, w.f, w)
			d.dispatch() // one flow fewer: the others' share may have grown
			d.unlock()
			return nil, ctx.Err()
		}
		d.unlock()
	}
	return w.result()
}

// Then is told a queued request's seat, or its refusal (AcquireThen). It
// is an interface rather than a func so that a caller's request, which
// holds its own state, can be told directly: a method value would cost
// an allocation per request.
type Then interface {
	Seated(*Ticket, error)
}

// AcquireThen is Acquire for a caller that does not wait: the ticket when
// a seat is free now, or the *Shed when the request is refused now; else
// (nil, nil) once it is queued, and then is called with what Acquire
// would return once it has it, by the goroutine that gives it a seat
// (then must not block). A queued request cannot be withdrawn: its
// caller gives a seat it no longer wants straight back.
func (d *Dispatcher) AcquireThen(key string, pri Priority, cost int, then Then) (*Ticket, error) {
	t, _, err := d.enter(key, pri, cost, then)
	return t, err
}

// enter gives a request of flow key a seat, or refuses it, or queues it:
// its waiter is then told (through ready, or then) once it has its turn.
func (d *Dispatcher) enter(key string, pri Priority, cost int, then Then) (*Ticket, *waiter, error) {
	cost = max(1, cost)
	d.mu.Lock()
	lv := &d.levels[pri]
	f := lv.flows[key]
	if f == nil {
		f = &flow{d: d, key: key}
		lv.flows[key] = f
	}
	if len(f.queue) == 0 && d.seatFree(pri) && f.inFlight < d.share(pri) && d.levelsIdle(pri) {
		d.start(pri, f, cost, lv.tag(f))
		d.mu.Unlock()
		return &Ticket{d: d, pri: pri, f: f, cost: cost, start: d.cfg.Now()}, nil, nil
	}
	if shed := d.admitQueue(pri, f); shed != nil {
		d.forget(pri, f)
		d.unlock()
		return nil, nil, shed
	}
	w := &waiter{cost: cost, pri: pri, f: f, then: then, enqueued: d.cfg.Now()}
	if then == nil {
		w.ready = make(chan struct{})
	}
	d.waited = w.enqueued
	if len(f.queue) == 0 {
		f.head = lv.tag(f)
		lv.busy = append(lv.busy, f)
	}
	f.queue = append(f.queue, w)
	d.queued++
	d.dispatch()
	d.unlock()
	return nil, w, nil
}

// result is what a waiter's Acquire returns once it had its turn.
func (w *waiter) result() (*Ticket, error) {
	if w.shed != nil {
		return nil, w.shed
	}
	now := w.f.d.cfg.Now()
	return &Ticket{d: w.f.d, pri: w.pri, f: w.f, cost: w.cost, start: now, waited: now.Sub(w.enqueued)}, nil
}

// wake tells w it had its turn (granted, or shed). d.mu must be held; a
// waiter with then is told by unlock, outside it.
func (d *Dispatcher) wake(w *waiter) {
	if w.then == nil {
		close(w.ready)
		return
	}
	d.told = append(d.told, w)
}

// unlock releases d.mu and calls then for the waiters woken meanwhile.
// One goroutine calls them at a time, in the order they were woken: a
// then that gives its seat straight back wakes the next waiter, which
// joins this loop rather than deepen the stack.
func (d *Dispatcher) unlock() {
	if d.telling || len(d.told) == 0 {
		d.mu.Unlock()
		return
	}
	d.telling = true
	for len(d.told) > 0 {
		w := d.told[0]
		d.told[0] = nil
		d.told = d.told[1:]
		d.mu.Unlock()
		w.then.Seated(w.result())
		d.mu.Lock()
	}
	d.told = nil
	d.telling = false
	d.mu.Unlock()
}

// tag is the start tag of f's next request when f becomes busy: not before
// the level's virtual time (an idle flow saves no credit), nor before its
// own last request's finish.
func (lv *level) tag(f *flow) float64 { return max(lv.vtime, f.finish) }

// seatFree reports whether a request at pri may take a seat now.
func (d *Dispatcher) seatFree(pri Priority) bool {
	if d.inUse >= d.cfg.Seats {
		return false
	}
	return pri == Lease || d.inNew < d.cfg.Seats-d.cfg.LeaseSeats
}

// share is how many seats one flow at pri may hold: alone, all of the
// level's; beside others (flows with requests queued or in service), the
// level's seats divided among them, and at most FlowSeats. A flow below
// its share is not busy all the time (a client in a closed loop spends
// some of it reading answers): the seats it leaves are not given to the
// others beyond their share, since a storm of cheap requests served at
// once costs the server outside its seats too (reading, parsing,
// answering), and that is the others' time.
func (d *Dispatcher) share(pri Priority) int {
	seats := d.cfg.Seats
	if pri == New {
		seats -= d.cfg.LeaseSeats
	}
	flows := len(d.levels[pri].flows)
	if flows <= 1 {
		return seats
	}
	return max(1, min(d.cfg.FlowSeats, seats/flows))
}

// levelsIdle reports whether nothing at pri or before it is queued: a
// request does not pass those already waiting.
func (d *Dispatcher) levelsIdle(pri Priority) bool {
	for p := Lease; p <= pri; p++ {
		if len(d.levels[p].busy) > 0 {
			return false
		}
	}
	return true
}

// admitQueue decides whether a request of f may be queued at pri, making
// room in the total by taking the last request of the longest New queue
// when that queue is not f's own.
func (d *Dispatcher) admitQueue(pri Priority, f *flow) *Shed {
	if len(f.queue) >= d.cfg.FlowQueue {
		return &Shed{Reason: "queue-full", RetryAfter: d.retryAfter(pri, len(f.queue))}
	}
	if pri == New {
		if wait := d.expectedWait(pri, len(f.queue)+1); wait > d.cfg.MaxWait {
			return &Shed{Reason: "wait", RetryAfter: d.clampRetry(wait)}
		}
	}
	if d.queued < d.cfg.TotalQueue {
		return nil
	}
	var longest *flow
	for _, g := range d.levels[New].busy {
		if longest == nil || len(g.queue) > len(longest.queue) {
			longest = g
		}
	}
	if longest == nil || longest == f || (pri == New && len(longest.queue) <= len(f.queue)+1) {
		return &Shed{Reason: "total-full", RetryAfter: d.retryAfter(pri, len(f.queue))}
	}
	w := longest.queue[len(longest.queue)-1]
	w.shed = &Shed{Reason: "evicted", RetryAfter: d.retryAfter(New, len(longest.queue))}
	d.remove(New, longest, w)
	d.wake(w)
	return nil
}

// expectedWait is how long the n-th request of a flow at pri is likely to
// wait: the busy flows of its level are served in turn, and the Lease
// level's queue before New's.
func (d *Dispatcher) expectedWait(pri Priority, n int) time.Duration {
	seats := d.cfg.Seats
	if pri == New {
		seats -= d.cfg.LeaseSeats
	}
	ahead := n * max(1, len(d.levels[pri].busy))
	if pri == New {
		ahead += d.levels[Lease].queuedCount()
	}
	return time.Duration(int64(d.service) * int64(ahead) / int64(max(1, seats)))
}

func (lv *level) queuedCount() int {
	n := 0
	for _, f := range lv.busy {
		n += len(f.queue)
	}
	return n
}

func (d *Dispatcher) retryAfter(pri Priority, n int) time.Duration {
	return d.clampRetry(d.expectedWait(pri, n+1))
}

func (d *Dispatcher) clampRetry(wait time.Duration) time.Duration {
	return min(max(wait, minRetryAfter), maxRetryAfter)
}

// remove takes w out of f's queue at pri.
func (d *Dispatcher) remove(pri Priority, f *flow, w *waiter) {
	for i, x := range f.queue {
		if x == w {
			f.queue = append(f.queue[:i], f.queue[i+1:]...)
			break
		}
	}
	d.queued--
	if len(f.queue) == 0 {
		d.unbusy(pri, f)
	}
	d.forget(pri, f)
}

func (d *Dispatcher) unbusy(pri Priority, f *flow) {
	lv := &d.levels[pri]
	for i, g := range lv.busy {
		if g == f {
			lv.busy = append(lv.busy[:i], lv.busy[i+1:]...)
			return
		}
	}
}

// forget drops a flow with nothing queued or in service: idle flows cost
// no memory, and keep no credit.
func (d *Dispatcher) forget(pri Priority, f *flow) {
	if len(f.queue) == 0 && f.inFlight == 0 {
		delete(d.levels[pri].flows, f.key)
	}
}

// start gives a seat to a request of f starting at virtual time tag.
func (d *Dispatcher) start(pri Priority, f *flow, cost int, tag float64) {
	lv := &d.levels[pri]
	lv.vtime = tag
	f.finish = tag + float64(cost)
	f.inFlight++
	d.inUse++
	if pri == New {
		d.inNew++
	}
}

// dispatch gives free seats to queued requests: the Lease level first,
// and within a level the busy flow whose next request has the smallest
// start tag.
func (d *Dispatcher) dispatch() {
	for pri := Lease; pri < levels; pri++ {
		lv := &d.levels[pri]
		for d.seatFree(pri) {
			share := d.share(pri)
			var f *flow
			for _, g := range lv.busy {
				if g.inFlight < share && (f == nil || g.head < f.head) {
					f = g
				}
			}
			if f == nil {
				break // every busy flow holds its share
			}
			w := f.queue[0]
			f.queue = f.queue[1:]
			d.queued--
			d.start(pri, f, w.cost, f.head)
			if len(f.queue) == 0 {
				d.unbusy(pri, f)
			} else {
				f.head = f.finish // still busy: its next request starts where this one ends
			}
			w.granted = true
			d.wake(w)
		}
		if pri == Lease && !d.seatFree(Lease) && slices.ContainsFunc(lv.busy, func(f *flow) bool { return f.inFlight < d.share(Lease) }) {
			return // the Lease level waits for a seat: New does not pass it
		}
	}
}

// Done gives the seat back. cost is what the request turned out to cost
// (a refusal that committed nothing costs less than the commit estimated);
// 0 keeps the estimate. Done more than once is a no-op.
func (t *Ticket) Done(cost int) {
	d := t.d
	d.mu.Lock()
	if t.done {
		d.mu.Unlock()
		return
	}
	t.done = true
	if held := d.cfg.Now().Sub(t.start); held >= 0 {
		// An average over about the last 64 requests.
		d.service += (held - d.service) / 64
	}
	if cost > 0 && cost < t.cost {
		// The flow is charged what it used: its next requests move up.
		diff := float64(t.cost - cost)
		lv := &d.levels[t.pri]
		t.f.finish -= diff
		if len(t.f.queue) > 0 {
			t.f.head = max(lv.vtime, t.f.head-diff)
		}
	}
	t.f.inFlight--
	d.inUse--
	if t.pri == New {
		d.inNew--
	}
	d.forget(t.pri, t.f)
	d.dispatch()
	d.unlock()
}

// Contended reports whether the server is busy enough for pacing
// (Pacer): a request is queued for a seat, or one was within the last
// PaceWindow.
func (d *Dispatcher) Contended() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.queued > 0 || (!d.waited.IsZero() && d.cfg.Now().Sub(d.waited) < PaceWindow)
}

// Stats is a snapshot of the dispatcher.
type Stats struct {
	InUse, Queued, Flows int
}

// Stats reports the seats in use, the requests queued and the flows known.
func (d *Dispatcher) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return Stats{InUse: d.inUse, Queued: d.queued, Flows: len(d.levels[Lease].flows) + len(d.levels[New].flows)}
}
