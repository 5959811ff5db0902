package auth

import (
	"context"
	"testing"
)

// Two keyrings over one store, as two nodes of a cluster: after Reload,
// each sees the other's creations, and a key revoked by one is refused by
// the other and closes its streams there.
func TestReloadFollowsAnotherKeyring(t *testing.T) {
	ctx := context.Background()
	store := &memStore{}
	a, _ := NewKeyring(ctx, store, "tok", nil)
	b, _ := NewKeyring(ctx, store, "tok", nil)
	_, secret, err := a.Create(ctx, "ci", Client, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Authenticate(secret); err != ErrUnauthenticated {
		t.Fatalf("before reload: %v, want unauthenticated", err)
	}
	if err := b.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := b.Authenticate(secret)
	if err != nil || p.Role != Client {
		t.Fatalf("after reload: %v %v", p, err)
	}
	// A reload that changes nothing keeps the principal and its channel.
	b.Reload(ctx)
	if q, _ := b.Authenticate(secret); q != p {
		t.Fatal("an unchanged key got a new principal")
	}
	if err := a.Revoke(ctx, p.KeyID); err != nil {
		t.Fatal(err)
	}
	b.Reload(ctx)
	if _, err := b.Authenticate(secret); err != ErrUnauthenticated {
		t.Fatalf("revoked elsewhere: %v, want unauthenticated", err)
	}
	select {
	case <-p.Revoked():
	default:
		t.Fatal("a key revoked elsewhere left its streams open")
	}
	if len(b.List()) != 0 {
		t.Fatalf("list after revocation: %v", b.List())
	}
}
