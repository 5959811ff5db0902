package client_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/client/fenceviewtest"
	"github.com/fenceview/fenceview/internal/servertest"
)

// gate is a reverse proxy in front of a real server, counting the
// websocket upgrades it passes and the JSON API calls of the operations
// the RPC stream carries; with refuse set it answers every upgrade 400,
// as a proxy without websocket support does.
type gate struct {
	refuse   atomic.Bool
	upgrades atomic.Int64 // passed on
	refused  atomic.Int64
	calls    atomic.Int64 // JSON API calls on /v1/locks, fence, semaphores, elections
	URL      string
}

func newGate(t *testing.T, backend string) *gate {
	t.Helper()
	target, err := url.Parse(backend)
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			if g.refuse.Load() {
				g.refused.Add(1)
				http.Error(w, "websocket upgrades are not supported here", http.StatusBadRequest)
				return
			}
			g.upgrades.Add(1)
		} else {
			for _, p := range []string{"/v1/locks", "/v1/fence/", "/v1/semaphores/", "/v1/elections/"} {
				if strings.HasPrefix(r.URL.Path, p) {
					g.calls.Add(1)
				}
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	g.URL = ts.URL
	return g
}

// everyPrimitive takes and gives back a lock, fences, a permit, a
// multi-lock and an election's leadership, and reads a lock's state: one
// of each operation the RPC stream carries.
func everyPrimitive(t *testing.T, c *client.Client) {
	t.Helper()
	ctx := context.Background()
	m := c.Mutex("gate/lock", "a")
	tok, err := m.TryLock(ctx, 0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Fence(ctx, "gate/lock", tok); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mutex("gate/lock", "b").TryLock(ctx, 0, time.Minute); !errors.Is(err, client.ErrLockHeld) {
		t.Fatalf("a held lock: %v, want ErrLockHeld", err)
	}
	if _, err := c.State(ctx, "gate/lock"); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := c.Semaphore("gate/jobs", 2).TryAcquire(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := c.LockAll(ctx, "a", "gate/x", "gate/y")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	e := c.Election("gate/leader")
	if _, err := e.Campaign(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	if err := e.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}

// A client made with nothing but a URL carries every primitive over one
// RPC stream; DisableRPC puts them on the JSON API.
func TestDefaultClientTakesTheRPCStream(t *testing.T) {
	srv := fenceviewtest.New(t)
	g := newGate(t, srv.URL)
	c, err := client.New(client.Config{URL: g.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	everyPrimitive(t, c)
	if up, calls := g.upgrades.Load(), g.calls.Load(); up != 1 || calls != 0 {
		t.Errorf("a default client: %d websocket upgrades and %d JSON API calls, want 1 and 0", up, calls)
	}

	g.upgrades.Store(0)
	off, err := client.New(client.Config{URL: g.URL, DisableRPC: true})
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	everyPrimitive(t, off)
	if up, calls := g.upgrades.Load(), g.calls.Load(); up != 0 || calls == 0 {
		t.Errorf("DisableRPC: %d websocket upgrades and %d JSON API calls, want 0 and some", up, calls)
	}
}

// Behind a proxy that refuses websocket upgrades, a default client
// carries everything over the JSON API, says so once, and tries the
// stream again after RPCRetryAfter (by its clock), taking it when it
// opens.
func TestFallbackToJSONWhenTheUpgradeIsRefused(t *testing.T) {
	srv := fenceviewtest.New(t, fenceviewtest.Config{FakeClock: true})
	g := newGate(t, srv.URL)
	g.refuse.Store(true)
	var log servertest.LogBuffer
	c, err := client.New(client.Config{URL: g.URL, Clock: srv.Clock(), RPCRetryAfter: time.Minute,
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	everyPrimitive(t, c)
	everyPrimitive(t, c)
	if r, calls := g.refused.Load(), g.calls.Load(); r != 1 || calls == 0 {
		t.Errorf("refused upgrades: %d tries and %d JSON API calls, want 1 try and the calls", r, calls)
	}
	if n := strings.Count(log.String(), "RPC stream could not be opened"); n != 1 {
		t.Errorf("the log says %d times that the stream could not be opened, want once:\n%s", n, log.String())
	}

	// The proxy lets upgrades through now; the client tries again only
	// once RPCRetryAfter has passed.
	g.refuse.Store(false)
	if _, err := c.State(context.Background(), "gate/lock"); err != nil {
		t.Fatal(err)
	}
	if up := g.upgrades.Load(); up != 0 {
		t.Errorf("%d upgrades before RPCRetryAfter passed, want 0", up)
	}
	srv.Clock().Advance(time.Minute)
	calls := g.calls.Load()
	everyPrimitive(t, c)
	if up, more := g.upgrades.Load(), g.calls.Load()-calls; up != 1 || more != 0 {
		t.Errorf("after RPCRetryAfter: %d upgrades and %d more JSON API calls, want 1 and 0", up, more)
	}
}

// A refused credential at the upgrade is the server's answer, as the
// JSON API would give it, not a reason to leave the stream.
func TestUnauthenticatedUpgradeIsTheAnswer(t *testing.T) {
	srv := fenceviewtest.New(t, fenceviewtest.Config{AdminToken: "s3cret"})
	var log servertest.LogBuffer
	c := srv.Client(t, client.Config{Key: "not-a-key", Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if _, err := c.State(context.Background(), "r"); !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("State with an unknown key: %v, want ErrUnauthorized", err)
	}
	if log.String() != "" {
		t.Errorf("the log: %s, want nothing", log.String())
	}
}
