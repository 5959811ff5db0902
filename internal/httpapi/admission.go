package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/fair"
)

// Admission control: every lock operation, fence, report and read of one
// thing, over the JSON API and the RPC stream alike, takes a seat of the
// server's dispatcher (package fair) before it runs. Its flow is its
// credential (each API key, the admin token; with auth off, the client's
// address), so a key that opens many connections gets no more than a key
// with one; lease-keeping goes first. Not admitted: the event stream and
// the RPC connection itself (long-lived, bounded by --max-websockets; a
// seat held for hours would be a seat lost), the admin's recovery routes
// (an operator must be able to act during a storm), the history listings
// and the dashboard (bounded by the request timeout, and reads of SQLite
// that never take the writer), health and metrics (watched most when the
// server is busiest, as APF's exempt level).

// Costs in seat units: a change that commits costs the group commit's
// share; a refusal that committed nothing, or a read from memory, costs
// least.
const (
	costCommit = 4
	costCheap  = 1
)

// DefaultMaxWaitersPerKey bounds the acquires (waitMs > 0) one flow has
// waiting at once: a tenth of the server's --max-waiters default, so one
// key cannot take every waiter slot.
const DefaultMaxWaitersPerKey = 1000

// opClass is how admission sees an operation: its level, its estimated
// cost, and whether a refusal of it still commits (a refused fence is
// recorded).
type opClass struct {
	pri          fair.Priority
	cost         int
	refusalCosts bool
}

var (
	classNew    = opClass{pri: fair.New, cost: costCommit}
	classLease  = opClass{pri: fair.Lease, cost: costCommit}
	classFence  = opClass{pri: fair.New, cost: costCommit, refusalCosts: true}
	classRead   = opClass{pri: fair.New, cost: costCheap}
	classReport = opClass{pri: fair.New, cost: costCommit, refusalCosts: true}
)

// Overload is the server's admission control: its dispatcher, the cap on
// each flow's waiting acquires, and the hooks metrics are fed through.
type Overload struct {
	Dispatcher *fair.Dispatcher
	// MaxWaitersPerKey bounds the waiting acquires of one flow
	// (default DefaultMaxWaitersPerKey).
	MaxWaitersPerKey int
	// ObserveShed, optional, is told of every request shed or refused
	// for its flow's waiters: the flow's class (key, admin, address),
	// the level, and why.
	ObserveShed func(flowClass, priority, reason string)
	// ObserveQueueWait, optional, is told how long each admitted request
	// waited for its seat.
	ObserveQueueWait func(priority string, d time.Duration)
	// HoldShed, when positive, holds a shed answer up to this long (and
	// no longer than the Retry-After it says) before it goes out: a client that
	// retries at once, ignoring Retry-After, then costs the server one
	// parked request per connection instead of a loop of refusals, each
	// read, parsed and answered. At most maxHeldSheds are held at once;
	// beyond, sheds are answered at once.
	HoldShed time.Duration
	// Pacer holds back the new requests of a key busier than the others
	// while the server is contended (pace.go); nil: one made from the
	// Dispatcher's bounds.
	Pacer *fair.Pacer
	// ObservePace, optional, is told of every request held back by the
	// Pacer: its flow's class and how long it is held.
	ObservePace func(flowClass string, d time.Duration)

	held     atomic.Int64
	paceOnce sync.Once
	sleep    func(context.Context, time.Duration) error // tests: instead of a timer

	once    sync.Once
	mu      sync.Mutex
	waiters map[string]int // waiting acquires per flow; flows at 0 are removed
}

func (o *Overload) init() {
	o.once.Do(func() {
		if o.Dispatcher == nil {
			o.Dispatcher = fair.NewDispatcher(fair.Defaults())
		}
		if o.MaxWaitersPerKey <= 0 {
			o.MaxWaitersPerKey = DefaultMaxWaitersPerKey
		}
		o.waiters = map[string]int{}
	})
}

// enterWait counts one more waiting acquire of flow, or refuses it with
// limit when the flow has its cap; leave when it has its answer.
func (o *Overload) enterWait(flow string) (leave func(), err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.waiters[flow] >= o.MaxWaitersPerKey {
		return nil, &fenceview.Error{Code: fenceview.ELIMIT, Message: fmt.Sprintf(
			"%d acquires of this key are already waiting, the server's limit per key (--max-waiters-per-key); retry later, or acquire with waitMs 0", o.MaxWaitersPerKey)}
	}
	o.waiters[flow]++
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.waiters[flow]--; o.waiters[flow] <= 0 {
			delete(o.waiters, flow)
		}
	}, nil
}

// Waiting is the number of waiting acquires the flow of a key id has
// (keyID "" with auth off: of addr).
func (o *Overload) Waiting(keyID, addr string) int {
	o.init()
	flow, _ := flowOf(&auth.Principal{KeyID: keyID}, addr)
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.waiters[flow]
}

// overload is the server's admission control, its defaults made on first
// use.
func (s *Server) overload() *Overload {
	s.overloadOnce.Do(func() {
		if s.Overload == nil {
			s.Overload = &Overload{}
		}
		s.Overload.init()
	})
	return s.Overload
}

// flowOf is the flow of a request by p from addr, and its class for the
// metrics (never the key itself: a label per key would grow without
// bound).
func flowOf(p *auth.Principal, addr string) (flow, class string) {
	switch {
	case p.KeyID == "admin":
		return "admin", "admin"
	case p.KeyID != "":
		return p.KeyTag(), "key"
	}
	return "addr:" + auth.ClientOf(addr), "address"
}

// admitted runs op when the request may: within its flow's cap on waiting
// acquires (when wait > 0), and once it has a seat, which it gives back
// when op returns; a waiting acquire gives it back before op, as it waits
// in the issuer's queue, not in a seat. entered, when not nil, is called
// once, when op starts or the request is refused (the RPC stream frees the
// key's in-flight slot of a waiting acquire there). A request shed is
// answered 429 overloaded with retryAfterMs, nothing done. flow and
// fclass are the request's flow (flowOf).
func (s *Server) admitted(ctx context.Context, flow, fclass string, class opClass, wait time.Duration, entered func(), op func() (int, any)) (int, any) {
	o := s.overload()
	enter := func() {
		if entered != nil {
			entered()
			entered = nil
		}
	}
	if wait > 0 {
		leave, err := o.enterWait(flow)
		if err != nil {
			enter()
			o.observeShed(fclass, class.pri, "waiters")
			return s.errorBody(ctx, err)
		}
		defer leave()
	}
	t, err := o.Dispatcher.Acquire(ctx, flow, class.pri, class.cost)
	if refusal, hold := o.seat(ctx, fclass, class, t, err); refusal != nil {
		enter()
		if hold > 0 {
			o.hold(ctx, hold)
		}
		return s.errorBody(ctx, refusal)
	}
	if wait > 0 {
		t.Done(0)
		enter()
		return op()
	}
	enter()
	status, body := op()
	t.Done(class.spent(status))
	return status, body
}

// thenAdmission is admitted for a request that never waits (wait 0) and
// holds no goroutine while it is served: its req is served once it has a
// seat, at once or by the goroutine that frees one, and answers through
// the admission (answer), which gives the seat back and hands the answer
// to req's finish; a refusal goes to finish too. The request embeds its
// admission, so admitting it allocates nothing of its own. Neither serve
// nor finish may block.
type thenAdmission struct {
	s      *Server
	ovl    *Overload
	ctx    context.Context
	fclass string
	class  opClass
	t      *fair.Ticket
	req    admittedRequest
}

// admittedRequest is the request of a thenAdmission.
type admittedRequest interface {
	serve(done answerer) // once it has a seat
	finish(status int, body any)
}

// admit asks flow's admission for a seat.
func (a *thenAdmission) admit(flow string) {
	a.ovl = a.s.overload()
	t, err := a.ovl.Dispatcher.AcquireThen(flow, a.class.pri, a.class.cost, a)
	if t != nil || err != nil {
		a.Seated(t, err)
	}
}

// Seated serves the request with its seat, or answers its refusal
// (fair.Then).
func (a *thenAdmission) Seated(t *fair.Ticket, err error) {
	if refusal, hold := a.ovl.seat(a.ctx, a.fclass, a.class, t, err); refusal != nil {
		a.refuse(refusal, hold)
		return
	}
	a.t = t
	a.req.serve(a)
}

// answer gives the seat back, at what the answer cost, and hands the
// answer on (answerer).
func (a *thenAdmission) answer(out any, err error) {
	status, body := a.s.answerOf(a.ctx, out, err)
	a.t.Done(a.class.spent(status))
	a.req.finish(status, body)
}

// refuse answers a refusal, after hold when the server holds shed answers.
func (a *thenAdmission) refuse(refusal error, hold time.Duration) {
	status, body := a.s.errorBody(a.ctx, refusal)
	if hold <= 0 || a.ovl.HoldShed <= 0 {
		a.req.finish(status, body)
		return
	}
	go func() {
		a.ovl.hold(a.ctx, hold)
		a.req.finish(status, body)
	}()
}

// seat is admission's verdict on a request once it has its seat t, or err
// instead, the same for a request that waits for its seat and for one told
// it later (thenAdmission): nil to serve it with t. Otherwise t is given
// back and the refusal is answered, a shed one after hold: a caller that
// left while queued, a key revoked meanwhile (401), or a shed (429).
func (o *Overload) seat(ctx context.Context, fclass string, class opClass, t *fair.Ticket, err error) (refusal error, hold time.Duration) {
	if err == nil {
		if o.ObserveQueueWait != nil {
			o.ObserveQueueWait(class.pri.String(), t.Waited())
		}
		switch {
		case ctx.Err() != nil: // the caller left while queued
			t.Done(costCheap)
			err = ctx.Err()
		case auth.FromContext(ctx).Gone(): // revoked (or its session ended) while queued
			t.Done(costCheap)
			return errKeyGone, 0
		default:
			return nil, 0
		}
	}
	var shed *fair.Shed
	reason := "gone"
	if errors.As(err, &shed) {
		reason = shed.Reason
	} else {
		shed = &fair.Shed{RetryAfter: time.Second} // the caller left while queued
	}
	o.observeShed(fclass, class.pri, reason)
	return overloaded(shed), shed.RetryAfter
}

// spent is what a request of the class answered status cost its flow: a
// refusal costs little, unless refusals of the class commit.
func (class opClass) spent(status int) int {
	if status != http.StatusOK && !class.refusalCosts {
		return costCheap
	}
	return class.cost
}

// maxHeldSheds bounds the shed answers held at once (HoldShed).
const maxHeldSheds = 4096

// hold waits before a shed answer (HoldShed), within ctx.
func (o *Overload) hold(ctx context.Context, retryAfter time.Duration) {
	// Retry-After is in whole seconds, rounded up: the hold may be as long.
	d := min(o.HoldShed, retryAfter.Round(time.Second)+time.Second)
	if d <= 0 {
		return
	}
	if o.held.Add(1) > maxHeldSheds {
		o.held.Add(-1)
		return
	}
	defer o.held.Add(-1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

func (o *Overload) observeShed(fclass string, pri fair.Priority, reason string) {
	if o.ObserveShed != nil {
		o.ObserveShed(fclass, pri.String(), reason)
	}
}

// overloaded is a shed request's refusal.
func overloaded(shed *fair.Shed) *fenceview.Error {
	ms := shed.RetryAfter.Milliseconds()
	return &fenceview.Error{Code: fenceview.EOVERLOADED, Fields: map[string]any{"retryAfterMs": ms},
		Message: fmt.Sprintf("the server is busy and this key has its share of it; nothing was done, retry after %d ms", ms)}
}

// clientAddr is the address r comes from (in cluster mode, the client a
// follower forwarded for).
func (s *Server) clientAddr(r *http.Request) string {
	if s.ClientAddr != nil {
		return s.ClientAddr(r)
	}
	return r.RemoteAddr
}
