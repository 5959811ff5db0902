package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/client/fenceviewtest"
)

// The real server's refusals come back typed by their code, over JSON and
// over RPC alike: lock-held, lease-expired, not-owner, not-held and a
// fence reason.
func TestRefusalCodesEndToEnd(t *testing.T) {
	for _, rpc := range []bool{false, true} {
		ctx := context.Background()
		srv, c := startWith(t, fenceviewtest.Config{}, client.Config{DisableRPC: !rpc})
		code := func(err error) string {
			var ae *client.APIError
			if !errors.As(err, &ae) {
				return ""
			}
			return ae.Code
		}

		a := c.Mutex("r", "a")
		t1 := lock(t, a)
		_, err := c.Mutex("r", "b").TryLock(ctx, 0, 0)
		var held *client.HeldError
		if !errors.Is(err, client.ErrLockHeld) || !errors.As(err, &held) || held.Holder != "a" || code(err) != "lock-held" {
			t.Fatalf("rpc %v: TryLock of a held lock = %v", rpc, err)
		}
		if err := c.Mutex("r", "b").Unlock(ctx); !errors.Is(err, client.ErrNotOwner) || code(err) != "not-owner" {
			t.Fatalf("rpc %v: Unlock by another holder = %v", rpc, err)
		}
		if err := c.Mutex("free", "a").Unlock(ctx); !errors.Is(err, client.ErrNotHeld) || code(err) != "not-held" {
			t.Fatalf("rpc %v: Unlock of a free lock = %v", rpc, err)
		}
		must(t, a.Unlock(ctx))

		// b's fixed lease runs out without a release: its Unlock is told so.
		b := c.Mutex("r", "b")
		t2, err := b.TryLock(ctx, 0, lease)
		must(t, err)
		srv.Clock().Advance(lease + 1)
		err = b.Unlock(ctx)
		var ae *client.APIError
		if !errors.Is(err, client.ErrLeaseExpired) || errors.Is(err, client.ErrNotOwner) || !errors.As(err, &ae) || ae.ExpiredAt.IsZero() {
			t.Fatalf("rpc %v: Unlock after the lease ran out = %v", rpc, err)
		}

		// a's old token after b's newer one was used: stale.
		_, err = c.Fence(ctx, "r", t2)
		must(t, err)
		_, err = c.Fence(ctx, "r", t1)
		var refused *client.RefusalError
		if !errors.Is(err, client.ErrStaleToken) || !errors.Is(err, client.ErrTokenRefused) || !errors.As(err, &refused) ||
			refused.Required != t2 || code(err) != "stale-token" {
			t.Fatalf("rpc %v: Fence of a stale token = %v", rpc, err)
		}
	}
}
