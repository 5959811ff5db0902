package issuer

import (
	"context"

	"github.com/fenceview/fenceview"
)

// With auth on, a lock belongs to the key that took it as well as to the
// holder name: holder names are public (lists, the stream), so the name
// alone would let anyone who reads it release the lock. The key travels in
// the context so every path to a lock call (HTTP, RPC, waiters) carries it
// without widening each signature.

type ownerKey struct{}

// WithOwner returns ctx whose lock calls act for owner (a key id; "" when
// auth is off, which makes the holder name the whole identity, as before).
func WithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

func ownerOf(ctx context.Context) string {
	o, _ := ctx.Value(ownerKey{}).(string)
	return o
}

var errNotOwner = fenceview.Errorf(fenceview.ECONFLICT, "not lock owner")
