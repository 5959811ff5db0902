package fair

import (
	"errors"
	"fmt"
	"testing"
)

// ThenFunc is a func as a Then.
type ThenFunc func(*Ticket, error)

// Seated calls f.
func (f ThenFunc) Seated(t *Ticket, err error) { f(t, err) }

// AcquireThen's requests are served in the same fair order as Acquire's,
// and told of their seat by the goroutine that freed it, with no
// goroutine of their own.
func TestAcquireThenQueuesFairly(t *testing.T) {
	d := newTest(Config{Seats: 2, LeaseSeats: 1, FlowQueue: 200, TotalQueue: 400})
	hold, err := d.AcquireThen("storm", New, costCommit, nil)
	if hold == nil || err != nil {
		t.Fatalf("a free seat: %v, %v; want a ticket at once", hold, err)
	}
	var order []string
	var seats []*Ticket
	queue := func(key, name string) {
		t.Helper()
		tk, err := d.AcquireThen(key, New, costCommit, ThenFunc(func(tk *Ticket, err error) {
			if err != nil {
				t.Errorf("%s: %v", name, err)
				return
			}
			order = append(order, name)
			seats = append(seats, tk)
		}))
		if tk != nil || err != nil {
			t.Fatalf("%s with every seat taken: %v, %v; want it queued", name, tk, err)
		}
	}
	for i := range 10 {
		queue("storm", fmt.Sprintf("storm-%d", i))
	}
	queue("honest", "honest")
	if len(order) != 0 || d.Stats().Queued != 11 {
		t.Fatalf("told %v before any seat was free; stats %+v", order, d.Stats())
	}
	hold.Done(0) // tells the next one here, on this goroutine
	if len(order) != 1 {
		t.Fatalf("after one seat freed: told %v, want one", order)
	}
	for len(seats) > 0 {
		tk := seats[0]
		seats = seats[1:]
		tk.Done(0)
	}
	if order[0] != "honest" && order[1] != "honest" {
		t.Fatalf("served %v: the honest flow's one request waited behind the storm's queue", order)
	}
	if len(order) != 11 {
		t.Fatalf("served %d of 11", len(order))
	}
	if s := d.Stats(); s != (Stats{}) {
		t.Fatalf("after every request is done: %+v, want nothing left", s)
	}
}

// A then that gives its seat straight back (a request refused at once)
// wakes the next waiter; the goroutine already telling tells it too, in
// a loop, so a long queue of such requests does not deepen the stack.
func TestAcquireThenTellsInALoop(t *testing.T) {
	d := newTest(Config{Seats: 2, LeaseSeats: 1, FlowQueue: 5000, TotalQueue: 5000})
	hold, _ := d.AcquireThen("x", New, 1, nil)
	depth, deepest, told := 0, 0, 0
	for range 2000 {
		d.AcquireThen("y", New, 1, ThenFunc(func(tk *Ticket, err error) {
			if err != nil {
				t.Error(err)
				return
			}
			depth++
			deepest = max(deepest, depth)
			told++
			tk.Done(0) // wakes the next waiter: told after this returns
			depth--
		}))
	}
	hold.Done(0)
	if told != 2000 || deepest != 1 {
		t.Fatalf("told %d of 2000, %d deep; want all, one at a time", told, deepest)
	}
	if s := d.Stats(); s != (Stats{}) {
		t.Fatalf("left behind: %+v", s)
	}
}

// Refused at once, AcquireThen returns the Shed and never calls then;
// evicted from the queue later, then is told the Shed.
func TestAcquireThenShed(t *testing.T) {
	d, hold := newHeld(2, 3)
	var evicted error
	called := 0
	for range 2 {
		d.AcquireThen("storm", New, 1, ThenFunc(func(tk *Ticket, err error) {
			called++
			if err != nil {
				evicted = err
				return
			}
			tk.Done(0)
		}))
	}
	tk, err := d.AcquireThen("storm", New, 1, ThenFunc(func(*Ticket, error) { t.Error("a request refused at once was told later") }))
	var shed *Shed
	if tk != nil || !errors.As(err, &shed) || shed.Reason != "queue-full" {
		t.Fatalf("over the flow's queue: %v, %v; want shed queue-full", tk, err)
	}
	d.AcquireThen("b", New, 1, ThenFunc(func(tk *Ticket, err error) {
		if err == nil {
			tk.Done(0)
		}
	}))
	// The total (3) is full: a newcomer takes the longest queue's last place.
	d.AcquireThen("c", New, 1, ThenFunc(func(tk *Ticket, err error) {
		if err == nil {
			tk.Done(0)
		}
	}))
	if !errors.As(evicted, &shed) || shed.Reason != "evicted" || called != 1 {
		t.Fatalf("the storm's last request: told %d times, %v; want shed evicted once", called, evicted)
	}
	hold.Done(0)
	if s := d.Stats(); s != (Stats{}) {
		t.Fatalf("left behind: %+v", s)
	}
}
