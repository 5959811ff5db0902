package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/server"
)

// lockOnce takes and releases the lock "orders" on srv and returns the
// fencing token of the grant.
func lockOnce(t *testing.T, srv *server.Server) int64 {
	t.Helper()
	ctx := context.Background()
	c, err := client.New(client.Config{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := c.Mutex("orders", "embedded-test")
	token, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	return token
}

// A server embedded from a Config serves the client; started again on the
// same SQLite file, it keeps the tokens rising: the counter is durable,
// not the process's.
func TestEmbeddedServerKeepsTokensAcrossRestarts(t *testing.T) {
	cfg := server.Config{Addr: "127.0.0.1:0", DBPath: filepath.Join(t.TempDir(), "fenceview.db")}
	var last int64
	var issuer string
	for run := range 3 {
		srv, err := server.Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(srv.URL(), "http://127.0.0.1:") {
			t.Fatalf("URL %q: want a loopback address", srv.URL())
		}
		if run == 0 {
			issuer = srv.Issuer()
		} else if srv.Issuer() != issuer {
			t.Fatalf("run %d: issuer %q, want the database's %q", run, srv.Issuer(), issuer)
		}
		for range 2 {
			token := lockOnce(t, srv)
			if token <= last {
				t.Fatalf("run %d: token %d after %d: tokens must rise, across restarts too", run, token, last)
			}
			last = token
		}
		if err := srv.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if last != 6 {
		t.Fatalf("six grants ended at token %d, want 6", last)
	}
}

// One server per file: a second Start on a file in use is refused, and the
// first keeps serving.
func TestEmbeddedServerRefusesAFileInUse(t *testing.T) {
	cfg := server.Config{DBPath: filepath.Join(t.TempDir(), "fenceview.db")}
	srv, err := server.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if second, err := server.Start(context.Background(), cfg); err == nil {
		second.Close()
		t.Fatal("a second server opened a database in use")
	}
	if lockOnce(t, srv) != 1 {
		t.Fatal("the first server's first grant is not token 1")
	}
}

func TestEmbeddedServerNeedsADatabase(t *testing.T) {
	if srv, err := server.Start(context.Background(), server.Config{}); err == nil {
		srv.Close()
		t.Fatal("started without a database path")
	}
}

// With auth on, SetAdminToken swaps the token at once; with auth off it
// is refused (auth cannot be turned on while running).
func TestEmbeddedServerSetAdminToken(t *testing.T) {
	dir := t.TempDir()
	open, err := server.Start(context.Background(), server.Config{DBPath: filepath.Join(dir, "open.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if err := open.SetAdminToken("new-token-0123456789"); err == nil {
		t.Fatal("auth off: SetAdminToken did not refuse")
	}

	srv, err := server.Start(context.Background(), server.Config{DBPath: filepath.Join(dir, "auth.db"), AdminToken: "old-token-0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	forceExpire := func(token string) error {
		c, err := client.New(client.Config{URL: srv.URL(), AdminToken: token, Key: token})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ForceExpire(ctx, "orders")
	}
	if err := forceExpire("old-token-0123456789"); err != nil {
		t.Fatalf("the admin token at start: %v", err)
	}
	if err := srv.SetAdminToken("new-token-0123456789"); err != nil {
		t.Fatal(err)
	}
	if err := forceExpire("old-token-0123456789"); !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("the replaced token: %v, want %v", err, client.ErrUnauthorized)
	}
	if err := forceExpire("new-token-0123456789"); err != nil {
		t.Fatalf("the new token: %v", err)
	}
}

// UnsignedGrants reaches the server: its grants carry no signature, and
// with RequireSignatures beside it the server does not start.
func TestEmbeddedServerUnsignedGrants(t *testing.T) {
	dir := t.TempDir()
	srv, err := server.Start(context.Background(), server.Config{DBPath: filepath.Join(dir, "f.db"), UnsignedGrants: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	res, err := http.Post(srv.URL()+"/v1/locks/orders/acquire", "application/json", strings.NewReader(`{"holder":"a"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var grant struct {
		Fencing map[string]any `json:"fencing"`
	}
	if err := json.NewDecoder(res.Body).Decode(&grant); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("acquire: %d %v", res.StatusCode, err)
	}
	if _, signed := grant.Fencing["signature"]; signed || grant.Fencing["token"] != float64(1) {
		t.Fatalf("an unsigned server's grant: %v", grant.Fencing)
	}
	if both, err := server.Start(context.Background(), server.Config{DBPath: filepath.Join(dir, "g.db"),
		UnsignedGrants: true, RequireSignatures: true}); err == nil {
		both.Close()
		t.Fatal("a server that would refuse its own tokens started")
	}
}
