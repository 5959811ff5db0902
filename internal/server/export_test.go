package server

// The session lifetimes, for the tests of package server_test.
const (
	SessionTTL   = sessionTTL
	SessionSweep = sessionSweep
)
