package fair

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// testClock is a clock the test moves.
type testClock struct{ t time.Time }

func (c *testClock) now() time.Time          { return c.t }
func (c *testClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestPacer(cfg Config, contended *bool) (*Pacer, *testClock) {
	c := &testClock{t: time.Unix(1_700_000_000, 0)}
	cfg.Now = c.now
	p := NewPacer(NewDispatcher(cfg))
	p.contended = func() bool { return *contended }
	return p, c
}

func mustPass(t *testing.T, p *Pacer, key string, paced bool, what string) {
	t.Helper()
	if wait, _, shed := p.Take(key, paced); wait != 0 || shed != nil {
		t.Fatalf("%s: held %v, shed %v; want it through at once", what, wait, shed)
	}
}

// While the server is contended, a flow busier than the others has its
// new requests held back to the floor rate (the others being slower),
// while the other flow and its own lease-keeping pass at once.
func TestPacerHoldsBackTheBusiestFlow(t *testing.T) {
	contended := true
	p, clock := newTestPacer(Config{FlowRate: 10, MaxWait: time.Hour, FlowQueue: 100}, &contended)
	mustPass(t, p, "honest", true, "the honest flow's first request")
	mustPass(t, p, "storm", true, "the storm's first request (its burst)")
	wait, done, shed := p.Take("storm", true)
	if shed != nil || wait != 100*time.Millisecond {
		t.Fatalf("the storm's second request at once: held %v, shed %v; want held 100ms (1/10 s)", wait, shed)
	}
	done()
	wait, done, _ = p.Take("storm", true)
	if wait != 200*time.Millisecond {
		t.Fatalf("its third: held %v, want 200ms (after the second's turn)", wait)
	}
	done()
	mustPass(t, p, "storm", false, "the storm's lease-keeping")
	mustPass(t, p, "honest", true, "the honest flow's second request")
	// A second later the storm has its turns again, one at a time.
	clock.advance(time.Second)
	mustPass(t, p, "storm", true, "the storm's request after its turns came")
}

// The pace follows the busiest other flow: a storm beside a flow of 50
// requests a second is let through at a quarter above that rate, not the
// floor; lease-keeping does not count.
func TestPacerFollowsTheBusiestOtherFlow(t *testing.T) {
	contended := true
	p, clock := newTestPacer(Config{FlowRate: 1, MaxWait: time.Hour, FlowQueue: 1000}, &contended)
	for range 100 {
		mustPass(t, p, "honest", true, "the honest flow's request, alone")
		mustPass(t, p, "storm", false, "the storm's lease-keeping")
		clock.advance(20 * time.Millisecond) // 50 a second
	}
	// Its burst (a tenth of a second's worth), then one turn each.
	passed := 0
	for {
		wait, done, shed := p.Take("storm", true)
		if shed != nil {
			t.Fatal(shed)
		}
		if wait == 0 {
			if passed++; passed > 100 {
				t.Fatal("100 storm requests through at once: not paced")
			}
			continue
		}
		done()
		// The honest flow's rate, decayed over a one-second window, is
		// about 43 to 50 a second: 54-63 with the quarter above, so a
		// turn is 16-19 ms (this first one, less: what is left of the
		// burst counts), not the floor's 1 s.
		if wait <= 0 || wait > 20*time.Millisecond {
			t.Fatalf("the storm's first request beyond its burst: held %v, want at most a turn of about 1/60 s", wait)
		}
		break
	}
	if passed < 5 || passed > 6 {
		t.Fatalf("the storm's burst: %d requests, want 5-6 (a tenth of 54-63 a second)", passed)
	}
}

// Nothing is held back while the server has room, nor for a flow alone.
func TestPacerOnlyWhenContendedAndNotAlone(t *testing.T) {
	contended := false
	p, clock := newTestPacer(Config{FlowRate: 1, MaxWait: time.Hour, FlowQueue: 100}, &contended)
	mustPass(t, p, "honest", true, "the honest flow's request")
	for range 10 {
		mustPass(t, p, "storm", true, "a storm request while the server has room")
	}
	contended = true
	clock.advance(2 * PaceWindow)
	for range 10 {
		mustPass(t, p, "storm", true, "a storm request while no other flow is active")
	}
	if n := p.Flows(); n != 1 {
		t.Fatalf("the pacer remembers %d flows; want 1 (the honest flow, idle two windows, forgotten)", n)
	}
}

// A request that would wait longer than MaxWait, or beyond its flow's
// queue, is shed, and takes no turn.
func TestPacerSheds(t *testing.T) {
	contended := true
	p, _ := newTestPacer(Config{FlowRate: 10, MaxWait: 250 * time.Millisecond, FlowQueue: 2}, &contended)
	mustPass(t, p, "honest", true, "the honest flow's request")
	mustPass(t, p, "storm", true, "the storm's burst")
	_, done1, _ := p.Take("storm", true) // 100 ms
	_, done2, _ := p.Take("storm", true) // 200 ms
	if _, _, shed := p.Take("storm", true); shed == nil || shed.Reason != "rate" {
		t.Fatalf("a third held request, over the flow's queue of 2: shed %v, want reason rate", shed)
	}
	done1()
	done2()
	if _, _, shed := p.Take("storm", true); shed == nil || shed.RetryAfter != 300*time.Millisecond {
		t.Fatalf("a request that would wait 300ms, over MaxWait: shed %v, want retry after 300ms", shed)
	}
}

// The dispatcher is contended while a request is queued, and for a
// window after the last one was.
func TestDispatcherContended(t *testing.T) {
	clock := &testClock{t: time.Unix(1_700_000_000, 0)}
	d := NewDispatcher(Config{Seats: 2, LeaseSeats: 1, Now: clock.now})
	if d.Contended() {
		t.Fatal("contended before any request")
	}
	seat, err := d.Acquire(context.Background(), "a", New, costCommit)
	if err != nil {
		t.Fatal(err)
	}
	if d.Contended() {
		t.Fatal("contended with a seat free for every request so far")
	}
	q := newRequests(t, d, 1)
	q.submit("b", New, costCommit, "b")
	if !d.Contended() {
		t.Fatal("not contended with a request queued")
	}
	seat.Done(0)
	q.next()
	if !d.Contended() {
		t.Fatal("not contended just after a request had to queue")
	}
	clock.advance(PaceWindow)
	if d.Contended() {
		t.Fatal("still contended a window after the last request queued")
	}
}

// A negative FlowRate turns pacing off.
func TestPacerOff(t *testing.T) {
	contended := true
	p, _ := newTestPacer(Config{FlowRate: -1, MaxWait: time.Hour, FlowQueue: 100}, &contended)
	mustPass(t, p, "honest", true, "the honest flow's request")
	for range 100 {
		mustPass(t, p, "storm", true, "a storm request with pacing off")
	}
}

// With many flows the pacer looks at them all only now and then (every as
// many requests as there are flows, and every PaceWindow), and still
// paces the busiest and forgets the idle.
func TestPacerManyFlows(t *testing.T) {
	contended := true
	p, clock := newTestPacer(Config{FlowRate: 10, MaxWait: time.Hour, FlowQueue: 1000}, &contended)
	for i := range 2 * scanAlways {
		mustPass(t, p, fmt.Sprintf("small-%d", i), true, "a small flow's request")
	}
	mustPass(t, p, "storm", true, "the storm's burst")
	wait, done, _ := p.Take("storm", true)
	if wait != 100*time.Millisecond {
		t.Fatalf("the storm's second request beside %d small flows: held %v, want 100ms (the floor: each small flow sent one)", 2*scanAlways, wait)
	}
	done()
	clock.advance(2 * PaceWindow)
	for range 10 {
		mustPass(t, p, "storm", true, "the storm's request, the small flows idle")
	}
	if n := p.Flows(); n != 1 {
		t.Fatalf("the pacer remembers %d flows; want 1 (the idle ones forgotten)", n)
	}
}
