package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/client/fenceviewtest"
	"github.com/fenceview/fenceview/guard"
)

const lease = 3 * time.Second

// start runs a real fenceview server on a fake clock and returns a client
// sharing that clock.
func start(t *testing.T, opts fenceviewtest.Config) (*fenceviewtest.Server, *client.Client) {
	return startWith(t, opts, client.Config{})
}

// startWith is start with the client's settings cfg.
func startWith(t *testing.T, opts fenceviewtest.Config, cfg client.Config) (*fenceviewtest.Server, *client.Client) {
	t.Helper()
	opts.FakeClock = true
	srv := fenceviewtest.New(t, opts)
	return srv, clientOf(t, srv, cfg)
}

// clientOf returns a client of srv with the settings cfg, on srv's clock
// and with the tests' lease; it is closed when t ends.
func clientOf(t *testing.T, srv *fenceviewtest.Server, cfg client.Config) *client.Client {
	t.Helper()
	cfg.Lease = lease
	return srv.Client(t, cfg)
}

// lock takes m's lock, or ends the test.
func lock(t *testing.T, m *client.Mutex) int64 {
	t.Helper()
	token, err := m.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return token
}

func expect(t *testing.T, events <-chan string, want string) {
	t.Helper()
	select {
	case got := <-events:
		if got != want {
			t.Fatalf("watchdog did %q, want %q", got, want)
		}
	case <-time.After(30 * time.Second): // a hang guard, not a synchronisation
		t.Fatalf("watchdog never did %q", want)
	}
}

func isDone(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

func TestLockStateUnlock(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, fenceviewtest.Config{})
	m := c.Mutex("inventory:42", "worker-a")
	if isDone(m.Context()) == false {
		t.Fatal("context of a never-locked mutex should be done")
	}
	tok, err := m.Lock(ctx)
	if err != nil || tok <= 0 {
		t.Fatalf("Lock = %d, %v", tok, err)
	}
	held := m.Context()
	st, err := m.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Locked || st.Holder != "worker-a" || st.HoldCount != 1 || st.Token != tok || st.Remaining != lease || st.Resource != "inventory:42" {
		t.Fatalf("state = %+v", st)
	}
	if m.Token().Number != tok || m.Fencing().Scope != "resource:inventory:42" || m.Fencing().Issuer == "" {
		t.Fatalf("Token %v Fencing %+v", m.Token(), m.Fencing())
	}
	if isDone(held) {
		t.Fatal("context done while holding")
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if !isDone(held) || !errors.Is(context.Cause(held), client.ErrUnlocked) {
		t.Fatalf("after Unlock: done %v cause %v", isDone(held), context.Cause(held))
	}
	st, _ = m.State(ctx)
	if st.Locked || st.Holder != "" || st.HoldCount != 0 || st.Token != tok || !st.ExpiresAt.IsZero() {
		t.Fatalf("state after unlock = %+v", st)
	}
	if !m.Token().IsZero() {
		t.Fatalf("Token after unlock = %v", m.Token())
	}
}

// Re-entrant grants take new tokens; the hold ends at the last Unlock.
func TestReentrantGrantsTakeNewTokens(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, fenceviewtest.Config{})
	m := c.Mutex("doc-1", "a")
	outer := lock(t, m)
	inner, err := m.TryLock(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if inner <= outer {
		t.Fatalf("inner token %d not above outer %d", inner, outer)
	}
	held := m.Context()
	if st, _ := m.State(ctx); st.HoldCount != 2 {
		t.Fatalf("hold count %d", st.HoldCount)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if isDone(held) {
		t.Fatal("first of two unlocks ended the hold")
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if !isDone(held) {
		t.Fatal("last unlock did not end the hold")
	}
	// One more is refused: the lock is free.
	if err := m.Unlock(ctx); !errors.Is(err, client.ErrNotHeld) {
		t.Fatalf("extra unlock = %v, want ErrNotHeld", err)
	}
}

func TestHeldByAnother(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, fenceviewtest.Config{})
	a, b := c.Mutex("r", "a"), c.Mutex("r", "b")
	lock(t, a)
	_, err := b.TryLock(ctx, 0, 0)
	var held *client.HeldError
	if !errors.As(err, &held) || !errors.Is(err, client.ErrHeld) || held.Holder != "a" || held.ExpiresAt.IsZero() || held.Resource != "r" {
		t.Fatalf("TryLock = %v", err)
	}
	if err := b.Unlock(ctx); !errors.Is(err, client.ErrNotOwner) {
		t.Fatalf("b.Unlock = %v, want ErrNotOwner", err)
	}
	if isDone(a.Context()) {
		t.Fatal("b's refused unlock ended a's hold")
	}
}

// A blocked Lock is served when the holder unlocks, with a larger token.
func TestLockWaitsForRelease(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, fenceviewtest.Config{})
	a, b := c.Mutex("r", "a"), c.Mutex("r", "b")
	ta := lock(t, a)
	got := make(chan int64, 1)
	errc := make(chan error, 1)
	go func() {
		tb, err := b.Lock(ctx)
		got <- tb
		errc <- err
	}()
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	tb := <-got
	if err := <-errc; err != nil || tb <= ta {
		t.Fatalf("b.Lock = %d, %v (a had %d)", tb, err, ta)
	}
}

// The watchdog keeps the lease alive across many lease lengths: the server
// would have expired it after one.
func TestWatchdogKeepsLeaseAlive(t *testing.T) {
	ctx := context.Background()
	srv, c := start(t, fenceviewtest.Config{})
	m := c.Mutex("inventory:42", "a")
	events := client.WatchdogEvents(m)
	tok := lock(t, m)
	for i := 0; i < 12; i++ { // 12 thirds: four lease lengths
		expect(t, events, "armed")
		srv.Clock().Advance(lease / 3)
		expect(t, events, "renewed")
	}
	st, err := m.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Locked || st.Holder != "a" || st.Token != tok || st.Remaining != lease {
		t.Fatalf("after four leases: %+v (token %d)", st, tok)
	}
	if _, err := c.Mutex("inventory:42", "b").TryLock(ctx, 0, 0); !errors.Is(err, client.ErrHeld) {
		t.Fatalf("another holder got the lock: %v", err)
	}
	if isDone(m.Context()) {
		t.Fatalf("context done: %v", context.Cause(m.Context()))
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// Without renewals the same clock steps do expire the lease: the test
// above is not passing for free.
func TestFixedLeaseRunsOut(t *testing.T) {
	ctx := context.Background()
	srv, c := start(t, fenceviewtest.Config{})
	m := c.Mutex("r", "a")
	events := client.WatchdogEvents(m)
	if _, err := m.TryLock(ctx, 0, lease); err != nil {
		t.Fatal(err)
	}
	held := m.Context()
	expect(t, events, "armed")
	srv.Clock().Advance(lease / 3)
	if isDone(held) {
		t.Fatal("fixed lease ended early")
	}
	srv.Clock().Advance(lease)
	expect(t, events, "lost")
	if cause := context.Cause(held); !errors.Is(cause, client.ErrLeaseLost) {
		t.Fatalf("cause = %v", cause)
	}
	if st, _ := m.State(ctx); st.Locked {
		t.Fatalf("server still has the lock: %+v", st)
	}
	if _, err := c.Mutex("r", "b").TryLock(ctx, 0, 0); err != nil {
		t.Fatalf("b after a's lease ran out: %v", err)
	}
}

// An admin force-expires the lock: the next renewal is refused and the
// context is cancelled at once, with the refusal as the cause.
func TestWatchdogCancelsWhenRenewalRefused(t *testing.T) {
	ctx := context.Background()
	srv, c := startWith(t, fenceviewtest.Config{AdminToken: "s3cret"}, client.Config{AdminToken: "s3cret"})
	m := c.Mutex("inventory:42", "a")
	events := client.WatchdogEvents(m)
	lock(t, m)
	held := m.Context()
	renewals(t, srv, events, 1)

	if err := c.ForceExpire(ctx, "inventory:42"); err != nil {
		t.Fatal(err)
	}
	if isDone(held) {
		t.Fatal("cancelled before the watchdog could know")
	}
	srv.Clock().Advance(lease / 3)
	expect(t, events, "lost")
	<-held.Done()
	cause := context.Cause(held)
	if !errors.Is(cause, client.ErrLeaseLost) || !errors.Is(cause, client.ErrLeaseExpired) {
		t.Fatalf("cause = %v, want ErrLeaseLost and ErrLeaseExpired", cause)
	}
	if !m.Token().IsZero() {
		t.Fatalf("Token after loss = %v", m.Token())
	}
	if err := m.Unlock(ctx); !errors.Is(err, client.ErrLeaseExpired) {
		t.Fatalf("Unlock after loss = %v, want ErrLeaseExpired", err)
	}
	// A new Lock starts a new hold with a new context.
	lock(t, m)
	if isDone(m.Context()) {
		t.Fatal("new hold's context is done")
	}
}

// The server goes away: renewals fail, the watchdog retries, and the
// context is cancelled when the lease would have run out, not before.
func TestWatchdogCancelsWhenServerUnreachable(t *testing.T) {
	srv, c := start(t, fenceviewtest.Config{})
	m := c.Mutex("r", "a")
	events := client.WatchdogEvents(m)
	lock(t, m)
	held := m.Context()
	expect(t, events, "armed")
	srv.Close()
	srv.Clock().Advance(lease / 3)
	expect(t, events, "retry")
	expect(t, events, "armed")
	if isDone(held) {
		t.Fatal("cancelled while the lease still runs")
	}
	srv.Clock().Advance(lease / 3)
	expect(t, events, "retry")
	expect(t, events, "armed")
	srv.Clock().Advance(lease) // past the end of the lease
	expect(t, events, "lost")
	cause := context.Cause(held)
	if !errors.Is(cause, client.ErrLeaseLost) || errors.Is(cause, client.ErrLeaseExpired) || !strings.Contains(cause.Error(), "unreachable") {
		t.Fatalf("cause = %v", cause)
	}
}

func TestFence(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, fenceviewtest.Config{})
	a, b := c.Mutex("acct/7 ü", "a"), c.Mutex("acct/7 ü", "b")
	ta, _ := a.TryLock(ctx, 0, lease)
	a.Unlock(ctx)
	tb, _ := b.TryLock(ctx, 0, lease)
	f, err := c.Fence(ctx, "acct/7 ü", tb)
	if err != nil || f.Token != tb || f.IdempotencyKey != guard.IdempotencyKey("acct/7 ü", tb) {
		t.Fatalf("Fence(%d) = %+v, %v", tb, f, err)
	}
	_, err = c.Fence(ctx, "acct/7 ü", ta)
	var stale *client.RefusalError
	if !errors.As(err, &stale) || stale.Required != tb || stale.Presented != ta || stale.Reason != guard.ReasonStale {
		t.Fatalf("Fence(%d) = %v", ta, err)
	}
	// One type for every refusal: the guard package's.
	var gs *guard.RefusalError
	if !errors.As(err, &gs) {
		t.Fatal("not a *guard.RefusalError")
	}
	_, err = c.Fence(ctx, "acct/7 ü", tb+1000)
	if !errors.As(err, &stale) || stale.Reason != guard.ReasonUnissued {
		t.Fatalf("unissued token: %v", err)
	}
	_, err = c.FenceToken(ctx, "acct/7 ü", guard.Token{Token: tb, Scope: "resource:other"})
	if !errors.As(err, &stale) || stale.Reason != guard.ReasonScopeMismatch {
		t.Fatalf("foreign scope: %v", err)
	}
	env := b.Fencing()
	if _, err := c.FenceToken(ctx, "acct/7 ü", env); err != nil {
		t.Fatalf("own envelope: %v", err)
	}
}

func TestForceExpireNeedsAdminToken(t *testing.T) {
	ctx := context.Background()
	srv, admin := startWith(t, fenceviewtest.Config{AdminToken: "s3cret"}, client.Config{AdminToken: "s3cret"})
	k, err := admin.CreateKey(ctx, "worker", "client", nil)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := client.New(client.Config{URL: srv.URL, Key: k.Secret, Clock: srv.Clock()})
	m := c.Mutex("r", "a")
	lock(t, m)
	err = c.ForceExpire(ctx, "r")
	var ae *client.APIError
	if !errors.Is(err, client.ErrUnauthorized) || !errors.As(err, &ae) || ae.StatusCode != 403 {
		t.Fatalf("ForceExpire with a client key = %v, want 403", err)
	}
	wrong, _ := client.New(client.Config{URL: srv.URL, AdminToken: "nope"})
	if err := wrong.ForceExpire(ctx, "r"); !errors.Is(err, client.ErrUnauthorized) || !errors.As(err, &ae) || ae.StatusCode != 401 {
		t.Fatalf("wrong token = %v, want 401", err)
	}
	if st, _ := m.State(ctx); !st.Locked {
		t.Fatal("unauthorised expire freed the lock")
	}
}

// Ids with slashes, spaces, percent signs, dots and non-ASCII letters reach
// the server as one path segment and come back unchanged.
func TestResourceIDsAreEscaped(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, fenceviewtest.Config{})
	for _, id := range []string{"orders/2026/42", "a b", "100%", "ünïcødé/日本", "?x=1#y", "a/../b", "..", ".", "trailing/"} {
		m := c.Mutex(id, "holder one/ü")
		tok, err := m.Lock(ctx)
		if err != nil {
			t.Fatalf("Lock(%q) = %v", id, err)
		}
		st, err := m.State(ctx)
		if err != nil || st.Resource != id || st.Holder != "holder one/ü" || st.Token != tok {
			t.Fatalf("State(%q) = %+v, %v", id, st, err)
		}
		if _, err := c.Fence(ctx, id, tok); err != nil {
			t.Fatalf("Fence(%q) = %v", id, err)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatalf("Unlock(%q) = %v", id, err)
		}
	}
}

func TestBadInputIsRefusedBeforeSending(t *testing.T) {
	ctx := context.Background()
	hits := 0
	ts := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits++ }))
	defer ts.Close()
	c, err := client.New(client.Config{URL: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 161)
	checks := map[string]error{}
	_, checks["empty resource"] = c.Mutex("", "a").Lock(ctx)
	_, checks["long resource"] = c.Mutex(long, "a").TryLock(ctx, 0, 0)
	_, checks["control char holder"] = c.Mutex("r", "a\x00").Lock(ctx)
	_, checks["negative wait"] = c.Mutex("r", "a").TryLock(ctx, -time.Second, 0)
	checks["unlock"] = c.Mutex("r", "").Unlock(ctx)
	_, checks["fence zero"] = c.Fence(ctx, "r", 0)
	_, checks["fence resource"] = c.Fence(ctx, "", 5)
	_, checks["state"] = c.State(ctx, long)
	checks["expire"] = c.ForceExpire(ctx, "")
	for name, err := range checks {
		if !errors.Is(err, client.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	if hits != 0 {
		t.Fatalf("%d requests reached the server", hits)
	}
	if _, err := c.Fence(ctx, "", 5); !errors.Is(err, guard.ErrInvalidResourceID) {
		t.Fatalf("guard's error is not wrapped: %v", err)
	}
	for _, u := range []string{"", "localhost:8080", "ftp://x", "http://", "http://h/?q=1"} {
		if _, err := client.New(client.Config{URL: u}); !errors.Is(err, client.ErrInvalid) {
			t.Errorf("New(%q) = %v", u, err)
		}
	}
	// A zero Lease is DefaultLease; one outside 1ms..24h is refused.
	for _, l := range []time.Duration{-time.Second, time.Microsecond, 25 * time.Hour} {
		if _, err := client.New(client.Config{URL: ts.URL, Lease: l}); !errors.Is(err, client.ErrInvalid) {
			t.Errorf("lease %v accepted: %v", l, err)
		}
	}
}

// The server's own validation comes back as ErrInvalid with its message.
func TestServerRefusalsMapToErrors(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, fenceviewtest.Config{})
	for _, tc := range []struct{ wait, lease time.Duration }{{0, 25 * time.Hour}, {6 * time.Minute, 0}} {
		_, err := c.Mutex("r", "a").TryLock(ctx, tc.wait, tc.lease)
		var ae *client.APIError
		if !errors.Is(err, client.ErrInvalid) || !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Message == "" {
			t.Fatalf("TryLock(wait %v, lease %v) = %v", tc.wait, tc.lease, err)
		}
	}
	if st, _ := c.State(ctx, "r"); st.Locked || st.Token != 0 {
		t.Fatalf("refused requests changed the lock: %+v", st)
	}
}

// Server errors (5xx) are temporary APIErrors; other statuses map to their
// sentinel.
func TestErrorMapping(t *testing.T) {
	ctx := context.Background()
	status := 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(`{"error":"said the server"}`))
	}))
	defer ts.Close()
	c, _ := client.New(client.Config{URL: ts.URL + "/prefix/"})
	cases := []struct {
		status int
		want   error
		temp   bool
	}{
		{400, client.ErrInvalid, false}, {413, client.ErrInvalid, false}, {401, client.ErrUnauthorized, false},
		{404, client.ErrNotFound, false}, {503, nil, true}, {500, nil, true},
	}
	for _, tc := range cases {
		status = tc.status
		_, err := c.State(ctx, "r")
		var ae *client.APIError
		if !errors.As(err, &ae) || ae.StatusCode != tc.status || ae.Message != "said the server" || ae.Temporary() != tc.temp {
			t.Fatalf("status %d: %v", tc.status, err)
		}
		if tc.want != nil && !errors.Is(err, tc.want) {
			t.Fatalf("status %d: %v is not %v", tc.status, err, tc.want)
		}
	}
}

// One Client keeps its connections: many calls, one TCP connection.
func TestConnectionsAreReused(t *testing.T) {
	var mu sync.Mutex
	conns := 0
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"resourceId":"r","locked":false,"holder":null,"holdCount":0,"token":0,"expiresAt":null,"remainingMs":0}`))
	}))
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			conns++
			mu.Unlock()
		}
	}
	ts.Start()
	defer ts.Close()
	c, _ := client.New(client.Config{URL: ts.URL, DisableRPC: true})
	for i := 0; i < 20; i++ {
		if _, err := c.State(context.Background(), "r"); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if conns != 1 {
		t.Fatalf("%d connections for 20 sequential calls, want 1", conns)
	}
}

// FenceCurrent, over HTTP and over the RPC stream: a token below the last
// one issued is refused as superseded with the last token issued, though
// it is not below the mark; Fence accepts the same token.
func TestFenceCurrent(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		cfg  client.Config
	}{{"http", client.Config{DisableRPC: true}}, {"rpc", client.Config{}}} {
		t.Run(tc.name, func(t *testing.T) {
			_, c := startWith(t, fenceviewtest.Config{}, tc.cfg)
			a, b := c.Mutex("jobs/1", "a"), c.Mutex("jobs/1", "b")
			ta, _ := a.TryLock(ctx, 0, lease)
			a.Unlock(ctx)
			tb, _ := b.TryLock(ctx, 0, lease)
			_, err := c.FenceCurrent(ctx, "jobs/1", guard.Token{Token: ta})
			var refused *client.RefusalError
			if !errors.As(err, &refused) || refused.Reason != guard.ReasonSuperseded || refused.Required != tb || refused.Presented != ta {
				t.Fatalf("FenceCurrent(%d) after %d was issued = %v", ta, tb, err)
			}
			if _, err := c.Fence(ctx, "jobs/1", ta); err != nil {
				t.Fatalf("Fence(%d): the mark did not move, so the rule accepts it: %v", ta, err)
			}
			if f, err := c.FenceCurrent(ctx, "jobs/1", guard.Token{Token: tb}); err != nil || f.Token != tb {
				t.Fatalf("FenceCurrent(%d), the last token issued = %+v, %v", tb, f, err)
			}
		})
	}
}
