// Package fenceviewtest runs a real fenceview server in-process, on
// 127.0.0.1 and a temporary SQLite file, for tests and examples of code that
// uses the client: the same issuer, store and HTTP API as the fenceview
// command, not a mock.
//
//	srv, err := fenceviewtest.Start(ctx, fenceviewtest.Config{FakeClock: true})
//	defer srv.Close()
//	c, _ := client.New(client.Config{URL: srv.URL, Clock: srv.Clock()})
//	// (in a test, srv.Client(t) makes that client and closes it)
//	// srv.Clock().Advance(d) moves leases on the server and the client's
//	// watchdog together, without sleeping.
package fenceviewtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/internal/clock"
	"github.com/fenceview/fenceview/internal/server"
)

// Config configures a test server; the zero value is a working one.
type Config struct {
	// AdminToken, when set, is required by admin routes (force-expire).
	AdminToken string
	// FakeClock runs the server on a clock that moves only with
	// Clock().Advance; give the same clock to the client (client.Config.Clock).
	FakeClock bool
	// DBPath is the SQLite file; empty means a new file in a temporary
	// directory removed by Close.
	DBPath string
	// Logger receives the server's log; nil discards it.
	Logger *slog.Logger
	// RequireSignatures: the server's fence refuses unsigned tokens, as
	// with fenceview --require-signatures.
	RequireSignatures bool
}

// Server is a running fenceview server.
type Server struct {
	URL    string // http://127.0.0.1:port
	DBPath string

	clock *Clock
	tmp   string
	srv   *server.Server
}

// New starts a server for a test and closes it when the test ends; a
// failure to start fails the test. The Config is optional.
func New(t testing.TB, opts ...Config) *Server {
	t.Helper()
	var o Config
	if len(opts) > 0 {
		o = opts[0]
	}
	s, err := Start(context.Background(), o)
	if err != nil {
		t.Fatalf("fenceviewtest: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Start starts a server and returns once it is listening.
func Start(ctx context.Context, opts Config) (_ *Server, err error) {
	s := &Server{DBPath: opts.DBPath}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.DBPath == "" {
		if s.tmp, err = os.MkdirTemp("", "fenceviewtest-"); err != nil {
			return nil, err
		}
		s.DBPath = filepath.Join(s.tmp, "fenceview.db")
	}
	var clk clock.Clock = clock.Real{}
	if opts.FakeClock {
		s.clock = &Clock{f: clock.NewFake(clock.TestDate)}
		clk = s.clock.f
	}
	s.srv, err = server.Start(ctx, server.Config{
		Addr: "127.0.0.1:0", DBPath: s.DBPath, AdminToken: opts.AdminToken, Clock: clk, Logger: opts.Logger,
		RequireSignatures: opts.RequireSignatures,
	})
	if err != nil {
		return nil, err
	}
	s.URL = s.srv.URL()
	return s, nil
}

// Client returns a client of this server, closed when the test ends; a
// failure to make it fails the test. cfg is optional: its URL is this
// server's and, when the server runs on a fake clock and cfg names none,
// the client shares that clock.
func (s *Server) Client(t testing.TB, cfg ...client.Config) *client.Client {
	t.Helper()
	var c client.Config
	if len(cfg) > 0 {
		c = cfg[0]
	}
	c.URL = s.URL
	if c.Clock == nil && s.clock != nil {
		c.Clock = s.clock
	}
	cl, err := client.New(c)
	if err != nil {
		t.Fatalf("fenceviewtest: %v", err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// Clock returns the server's fake clock, nil unless Config.FakeClock.
func (s *Server) Clock() *Clock { return s.clock }

// Close stops the server, closes the database and removes the temporary
// directory, if any.
func (s *Server) Close() error {
	var errs []error
	if s.srv != nil {
		errs = append(errs, s.srv.Close())
	}
	if s.tmp != "" {
		errs = append(errs, os.RemoveAll(s.tmp))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("fenceviewtest: close: %w", err)
	}
	return nil
}

// Clock is a fake clock shared by the server and the clients under test.
// It implements client.Clock.
type Clock struct{ f *clock.Fake }

var _ client.Clock = (*Clock)(nil)

// Now returns the fake time.
func (c *Clock) Now() time.Time { return c.f.Now() }

// NewTimer returns a timer that fires when Advance passes its deadline.
func (c *Clock) NewTimer(d time.Duration) client.Timer { return c.f.NewTimer(d) }

// Advance moves time forward by d, firing every timer that comes due, on
// the server (lease expiry, waits) and in clients alike.
func (c *Clock) Advance(d time.Duration) { c.f.Advance(d) }
