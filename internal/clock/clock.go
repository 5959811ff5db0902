// Package clock lets lease logic run on real time in production and on a
// hand-driven clock in tests, so no test sleeps to wait for a lease.
package clock

import (
	"sort"
	"sync"
	"time"

	"github.com/fenceview/fenceview"
)

// Clock and Timer are the domain's (fenceview.Clock): named here too so
// the clocks below read as what they implement.
type (
	Clock = fenceview.Clock
	Timer = fenceview.Timer
)

// Real is the wall clock.
type Real struct{}

func (Real) Now() time.Time { return time.Now() }

func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time { return t.t.C }
func (t realTimer) Stop() bool          { return t.t.Stop() }

// Fake is a clock that moves only when told to. Timers fire, in deadline
// order, during Advance.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	// created receives a value whenever a timer is created, so tests can
	// wait until a goroutine is parked on the clock instead of sleeping.
	created chan struct{}
}

// TestDate is the instant every test's fake clock starts at, so times in
// test output and fixtures read the same everywhere.
var TestDate = time.Date(2026, 9, 24, 6, 14, 22, 0, time.UTC)

// NewFake returns a fake clock set to start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, created: make(chan struct{}, 1024)}
}

func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *Fake) NewTimer(d time.Duration) Timer {
	f.mu.Lock()
	t := &fakeTimer{clock: f, at: f.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		t.c <- f.now
		t.fired = true
	} else {
		f.timers = append(f.timers, t)
	}
	f.mu.Unlock()
	select {
	case f.created <- struct{}{}:
	default:
	}
	return t
}

// TimerCreated is signalled each time a timer is created.
func (f *Fake) TimerCreated() <-chan struct{} { return f.created }

// Advance moves the clock forward by d, firing every timer that comes due.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	sort.Slice(f.timers, func(i, j int) bool { return f.timers[i].at.Before(f.timers[j].at) })
	var keep []*fakeTimer
	for _, t := range f.timers {
		if !t.at.After(f.now) {
			t.fired = true
			t.c <- t.at
		} else {
			keep = append(keep, t)
		}
	}
	f.timers = keep
	f.mu.Unlock()
}

type fakeTimer struct {
	clock *Fake
	at    time.Time
	c     chan time.Time
	fired bool
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	f := t.clock
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.fired {
		return false
	}
	for i, x := range f.timers {
		if x == t {
			f.timers = append(f.timers[:i], f.timers[i+1:]...)
			break
		}
	}
	t.fired = true
	return true
}

// Set moves the clock to t, which may be in the past (a clock stepped back
// by NTP or an operator). Timers fire as in Advance.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	d := t.Sub(f.now)
	if d < 0 {
		f.now = t
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	f.Advance(d)
}
