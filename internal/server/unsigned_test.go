package server_test

import (
	"errors"
	"testing"

	"github.com/fenceview/fenceview/internal/server"
	"github.com/fenceview/fenceview/internal/servertest"
)

// With --signing=off a grant carries no signature, the server's own fence
// still enforces the token, and the keys stay published; a server that
// would refuse its own tokens does not start.
func TestUnsignedGrants(t *testing.T) {
	signed := startSigning(t, server.Config{})
	dbPath := signed.srv.DBPath
	first := signed.grant("orders", "a")
	if first["signature"] == nil {
		t.Fatalf("a default server's grant is unsigned: %v", first)
	}
	signed.srv.Close()

	h := startSigning(t, server.Config{DBPath: dbPath, UnsignedGrants: true})
	f := h.grant("orders2", "a")
	if code, body := h.do("POST", "/v1/locks/orders2/release", adminAuth, map[string]any{"holder": "a"}); code != 200 {
		t.Fatalf("release: %d %v", code, body)
	}
	old := f
	f = h.grant("orders2", "b")
	if sig, ok := f["signature"]; ok {
		t.Fatalf("--signing=off signed a grant: %v", sig)
	}
	if len(h.keys()) != 1 {
		t.Fatalf("keys are no longer published: %v", h.keys())
	}
	if code, body := h.fence("orders2", token(f), ""); code != 200 {
		t.Fatalf("fence with the unsigned token: %d %v", code, body)
	}
	if code, body := h.fence("orders2", token(old), ""); code != 409 || body["reason"] != "stale-token" {
		t.Fatalf("fence below the mark: %d %v", code, body)
	}
	// A grant signed before the switch still verifies at the fence.
	if code, body := h.fence("orders", token(first), first["signature"].(string)); code != 200 {
		t.Fatalf("fence with a token signed before --signing=off: %d %v", code, body)
	}

	_, err := servertest.TryStart(t, server.Config{DBPath: dbPath, UnsignedGrants: true, RequireSignatures: true})
	if !errors.Is(err, server.ErrUnsignedRequired) {
		t.Fatalf("unsigned grants with required signatures: %v", err)
	}
}
