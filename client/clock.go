package client

import "github.com/fenceview/fenceview/internal/clock"

// Clock is the time source of the watchdog: when to renew, and when a lease
// that could not be renewed has run out. The default is the wall clock;
// tests inject a fake one so they never sleep. It is the server's own clock
// interface, so one fake clock can drive a server and its clients together
// (see fenceviewtest).
//
//	type Clock interface {
//		Now() time.Time
//		NewTimer(d time.Duration) Timer
//	}
type Clock = clock.Clock

// Timer is the part of *time.Timer the watchdog uses.
//
//	type Timer interface {
//		C() <-chan time.Time
//		Stop() bool
//	}
type Timer = clock.Timer
