package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/client/fenceviewtest"
)

// Config.Key is the credential of every call, over HTTP and over the RPC
// stream; without it a server with auth on answers ErrUnauthorized.
func TestKeyOnEveryPath(t *testing.T) {
	ctx := context.Background()
	srv, admin := startWith(t, fenceviewtest.Config{AdminToken: "adm"}, client.Config{AdminToken: "adm"})
	k, err := admin.CreateKey(ctx, "w", "client", []string{"jobs/"})
	if err != nil || k.Secret == "" || k.Role != "client" {
		t.Fatalf("create key: %+v %v", k, err)
	}
	keys, err := admin.Keys(ctx)
	if err != nil || len(keys) != 1 || keys[0].Secret != "" || keys[0].ID != k.ID {
		t.Fatalf("keys: %+v %v", keys, err)
	}
	for _, rpc := range []bool{false, true} {
		cfg := client.Config{URL: srv.URL, Clock: srv.Clock(), DisableRPC: !rpc}
		anon, _ := client.New(cfg)
		if _, err := anon.Mutex("jobs/1", "h").TryLock(ctx, 0, time.Minute); !errors.Is(err, client.ErrUnauthorized) {
			t.Fatalf("rpc %v without a key: %v", rpc, err)
		}
		anon.Close()
		cfg.Key = k.Secret
		c, _ := client.New(cfg)
		m := c.Mutex("jobs/1", "h")
		tok, err := m.TryLock(ctx, 0, time.Minute)
		if err != nil {
			t.Fatalf("rpc %v with the key: %v", rpc, err)
		}
		if _, err := c.Fence(ctx, "jobs/1", tok); err != nil {
			t.Fatalf("rpc %v fence: %v", rpc, err)
		}
		if st, err := m.State(ctx); err != nil || !st.Locked {
			t.Fatalf("rpc %v state: %+v %v", rpc, st, err)
		}
		if _, err := c.Fence(ctx, "other/1", 1); !errors.Is(err, client.ErrUnauthorized) {
			t.Fatalf("rpc %v outside the prefixes: %v", rpc, err)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	if err := admin.RevokeKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	c, _ := client.New(client.Config{URL: srv.URL, Key: k.Secret})
	if _, err := c.Fence(ctx, "jobs/1", 1); !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("revoked key: %v", err)
	}
}
