package servertest

import (
	"testing"
	"time"
)

// HangGuard bounds a wait for a condition the server reaches on its own;
// it only turns a hang into a failure, it never times anything.
const HangGuard = 30 * time.Second

// Eventually polls cond until it holds, and fails the test (saying what
// never happened) once HangGuard has passed. It is for state other
// goroutines or processes reach (a request parked in a queue, a leader
// elected): only the outcome is asserted, never how long it took.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(HangGuard)
	// Short polls first, as most conditions hold at once; longer ones keep
	// a condition that asks a cluster over HTTP from busying the machine.
	for pause := time.Millisecond; !cond(); pause = min(2*pause, 10*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(pause)
	}
}
