package fenceview

import "time"

// Clock tells the time and makes timers. Leases run on it: the wall clock
// in production, a hand-driven one in tests (internal/clock), so no test
// sleeps to wait for a lease.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer the lock service uses.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
}
