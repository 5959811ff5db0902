package fenceview

import "context"

// With auth on, a lock belongs to the key that took it as well as to the
// holder name: holder names are public (lists, the stream), so the name
// alone would let anyone who reads it release the lock. The key travels in
// the context so every path to a lock call (HTTP, RPC, waiters) carries it
// without widening each signature.

type ownerKeyCtx struct{}

// WithOwnerKey returns ctx whose lock calls act for the API key id key
// ("" when auth is off, which makes the holder name the whole identity).
func WithOwnerKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, ownerKeyCtx{}, key)
}

// OwnerKeyFrom is the key id WithOwnerKey put in ctx, "" for none.
func OwnerKeyFrom(ctx context.Context) string {
	k, _ := ctx.Value(ownerKeyCtx{}).(string)
	return k
}
