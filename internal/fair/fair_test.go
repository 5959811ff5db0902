package fair

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// grant is a request that got its seat: who it was, and its ticket.
type grant struct {
	name string
	t    *Ticket
}

// fixedClock never moves: no estimate of service time, so only the queue
// bounds shed, and the tests depend on no timing.
func fixedClock() time.Time { return time.Unix(1_700_000_000, 0) }

func newTest(cfg Config) *Dispatcher {
	cfg.Now = fixedClock
	return NewDispatcher(cfg)
}

// newHeld is a dispatcher of two seats, one kept for leases, whose other
// seat a New request of flow "x" holds: what is submitted next queues, in
// flow queues of flowQueue and all of them of totalQueue.
func newHeld(flowQueue, totalQueue int) (*Dispatcher, *Ticket) {
	d := newTest(Config{Seats: 2, LeaseSeats: 1, FlowQueue: flowQueue, TotalQueue: totalQueue})
	hold, _ := d.Acquire(context.Background(), "x", New, 1)
	return d, hold
}

// requests are requests to d, each in a goroutine of its own: their
// grants arrive on served, their errors on failed.
type requests struct {
	t      *testing.T
	d      *Dispatcher
	served chan grant
	failed chan error
}

// newRequests is room for n requests' answers.
func newRequests(t *testing.T, d *Dispatcher, n int) *requests {
	return &requests{t: t, d: d, served: make(chan grant, n), failed: make(chan error, n)}
}

// submit starts a request that sends its grant on served (or its error on
// failed), and waits until the dispatcher holds it queued.
func (r *requests) submit(key string, pri Priority, cost int, name string) {
	r.t.Helper()
	before := r.d.Stats().Queued
	go func() {
		tk, err := r.d.Acquire(context.Background(), key, pri, cost)
		if err != nil {
			r.failed <- fmt.Errorf("%s: %w", name, err)
			return
		}
		r.served <- grant{name, tk}
	}()
	for r.d.Stats().Queued == before {
		runtime.Gosched() // not a sleep: the goroutine is queued when Stats says so
	}
}

// next takes the next grant, and gives its seat back.
func (r *requests) next() string {
	r.t.Helper()
	g := <-r.served
	g.t.Done(0)
	return g.name
}

func TestFairnessBetweenFlows(t *testing.T) {
	d := newTest(Config{Seats: 2, LeaseSeats: 1, FlowQueue: 200, TotalQueue: 400})
	hold, err := d.Acquire(context.Background(), "storm", New, costCommit)
	if err != nil {
		t.Fatal(err)
	}
	q := newRequests(t, d, 200)
	for i := range 100 {
		q.submit("storm", New, costCommit, fmt.Sprintf("storm-%d", i))
	}
	q.submit("honest", New, costCommit, "honest")
	hold.Done(0)
	// One round: the storm's head may go first, the honest request next.
	var order []string
	for range 2 {
		order = append(order, q.next())
	}
	if order[0] != "honest" && order[1] != "honest" {
		t.Fatalf("served %v first: the honest flow's one request waited behind the storm's queue", order)
	}
	for range 99 {
		q.next()
	}
	if s := d.Stats(); s.InUse != 0 || s.Queued != 0 || s.Flows != 0 {
		t.Fatalf("after every request is done: %+v, want nothing left", s)
	}
}

const costCommit = 4

func TestCostNotCount(t *testing.T) {
	// Flow a's requests turn out cheap (refusals), b's cost what they
	// said: a is served about costCommit times as often.
	d, hold := newHeld(100, 200)
	q := newRequests(t, d, 100)
	for i := range 20 {
		q.submit("a", New, 1, fmt.Sprintf("a%d", i))
		q.submit("b", New, costCommit, fmt.Sprintf("b%d", i))
	}
	hold.Done(0)
	a, b := 0, 0
	for range 15 {
		if name := q.next(); name[0] == 'a' {
			a++
		} else {
			b++
		}
	}
	if a < 2*b {
		t.Fatalf("of 15 served, %d cheap and %d costly: want the cheap flow served more", a, b)
	}
	for range 25 {
		q.next()
	}
}

func TestLeaseBeforeNew(t *testing.T) {
	d := newTest(Config{Seats: 2, LeaseSeats: 1, FlowQueue: 10, TotalQueue: 20})
	n0, _ := d.Acquire(context.Background(), "storm", New, costCommit)
	l0, _ := d.Acquire(context.Background(), "other", Lease, costCommit) // the lease seat
	q := newRequests(t, d, 10)
	for i := range 5 {
		q.submit("storm", New, costCommit, fmt.Sprintf("acquire-%d", i))
	}
	q.submit("holder", Lease, costCommit, "renew")
	n0.Done(0)
	if got := q.next(); got != "renew" {
		t.Fatalf("first served after a seat freed: %s, want the renew queued behind the acquires", got)
	}
	l0.Done(0)
	for range 5 {
		q.next()
	}
}

func TestLeaseSeatsKeptFromNew(t *testing.T) {
	d := newTest(Config{Seats: 4, LeaseSeats: 1, FlowQueue: 10, TotalQueue: 20})
	var held []*Ticket
	for range 3 {
		tk, _ := d.Acquire(context.Background(), "storm", New, costCommit)
		held = append(held, tk)
	}
	q := newRequests(t, d, 10)
	q.submit("storm", New, costCommit, "acquire") // queued: New has its 3 seats
	// The renew needs no New request to finish.
	tk, err := d.Acquire(context.Background(), "holder", Lease, costCommit)
	if err != nil {
		t.Fatal(err)
	}
	tk.Done(0)
	for _, h := range held {
		h.Done(0)
	}
	q.next()
}

func TestBoundedQueues(t *testing.T) {
	d, hold := newHeld(3, 5)
	q := newRequests(t, d, 10)
	for i := range 3 {
		q.submit("storm", New, 1, fmt.Sprintf("storm-%d", i))
	}
	// The flow's queue is full: shed at once, with a time to retry.
	_, err := d.Acquire(context.Background(), "storm", New, 1)
	var shed *Shed
	if !errors.As(err, &shed) || shed.Reason != "queue-full" || shed.RetryAfter < minRetryAfter {
		t.Fatalf("a 4th queued request of one flow: %v, want shed queue-full with a retry time", err)
	}
	for i := range 2 {
		q.submit("b", New, 1, fmt.Sprintf("b-%d", i))
	}
	// All queues full (5): a newcomer takes the place of the longest
	// queue's last request, which is shed.
	go func() {
		tk, err := d.Acquire(context.Background(), "c", New, 1)
		if err != nil {
			q.failed <- err
			return
		}
		q.served <- grant{"c", tk}
	}()
	err = <-q.failed
	if !errors.As(err, &shed) || shed.Reason != "evicted" || err.Error() == "" {
		t.Fatalf("the longest queue's last request: %v, want shed evicted", err)
	}
	if s := d.Stats(); s.Queued > 5 {
		t.Fatalf("queued %d, over the total of 5", s.Queued)
	}
	hold.Done(0)
	for range 5 {
		q.next()
	}
}

func TestCanceledWhileQueued(t *testing.T) {
	d, hold := newHeld(3, 5)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := d.Acquire(ctx, "y", New, 1)
		done <- err
	}()
	for d.Stats().Queued == 0 {
		runtime.Gosched()
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled while queued: %v", err)
	}
	hold.Done(0)
	if s := d.Stats(); s != (Stats{}) {
		t.Fatalf("left behind: %+v", s)
	}
}

func TestFlowSeatsBesideOthers(t *testing.T) {
	d := newTest(Config{Seats: 10, LeaseSeats: 2, FlowSeats: 2, FlowQueue: 10, TotalQueue: 20})
	// Alone, a flow may take every seat of its level.
	var storm []*Ticket
	for range 8 {
		tk, err := d.Acquire(context.Background(), "storm", New, 1)
		if err != nil {
			t.Fatal(err)
		}
		storm = append(storm, tk)
	}
	for _, tk := range storm {
		tk.Done(0)
	}
	// Beside another flow, at most FlowSeats, though seats are free.
	other, _ := d.Acquire(context.Background(), "honest", New, 1)
	q := newRequests(t, d, 10)
	for range 2 {
		tk, err := d.Acquire(context.Background(), "storm", New, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer tk.Done(0)
	}
	q.submit("storm", New, 1, "third")
	if s := d.Stats(); s.InUse != 3 || s.Queued != 1 {
		t.Fatalf("a flow beside another: %+v, want 3 seats in use (2 of them its own) and its third request queued", s)
	}
	other.Done(0) // alone again: its third request is served
	q.next()
}
