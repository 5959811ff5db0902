package main

import (
	"context"
	"testing"

	"github.com/fenceview/fenceview/internal/clock"
	"github.com/fenceview/fenceview/internal/server"
	"github.com/fenceview/fenceview/internal/servertest"
)

// The tests of the command start fenceview through internal/servertest:
// in this process (startServer: the command's Main, with servertest's
// defaults, configured as a test needs) or as its own OS process
// (servertest.StartProcess: the built binary, for signals and kills).

var t0 = clock.TestDate

// testServer is the real fenceview server on 127.0.0.1:0 with a temporary
// SQLite file.
type testServer struct {
	*Main
	t     testing.TB
	clock *clock.Fake // nil when a test gave the server another clock
	// bearer is sent as the credential of requests that give none: the
	// admin token when the server has one.
	bearer string
}

// startServer runs the command's Main in this process with servertest's
// defaults (127.0.0.1:0, a new SQLite file, a fake clock at t0);
// configure changes any of that before it starts. The server closes when
// the test ends.
func startServer(t testing.TB, configure ...func(*Main)) *testServer {
	t.Helper()
	cfg := servertest.Defaults(t, server.Config{})
	m := NewMain()
	m.Addr, m.DBPath, m.Logger, m.Clock = cfg.Addr, cfg.DBPath, cfg.Logger, cfg.Clock
	for _, f := range configure {
		f(m)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	fc, _ := m.Clock.(*clock.Fake)
	return &testServer{Main: m, t: t, clock: fc, bearer: m.AdminToken}
}

// realClock runs a server on the wall clock (benchmarks).
func realClock(m *Main) { m.Clock = clock.Real{} }

// TestMain removes the binaries the tests built.
func TestMain(m *testing.M) { servertest.Main(m) }
