package redisguard

import (
	"context"

	"github.com/fenceview/fenceview/guard"
)

var (
	_ guard.SignedChecker        = (*Guard)(nil)
	_ guard.SignedContextChecker = (*Guard)(nil)
)

// WriteSigned is Write for a signed token: sig is its signature text, as in
// X-Fencing-Signature. A guard not in signed mode ignores it.
func (g *Guard) WriteSigned(ctx context.Context, resourceID string, token int64, sig string, values ...Value) (guard.Decision, error) {
	if g.verify == nil {
		return g.Write(ctx, resourceID, token, values...)
	}
	if err := guard.ValidateToken(token); err != nil {
		return guard.Decision{}, err
	}
	if !g.verify.Verify(resourceID, token, sig) {
		return g.badSignature(ctx, resourceID, token, values)
	}
	return g.write(ctx, resourceID, token, values)
}

// CheckSigned is WriteSigned without values and without a context.
func (g *Guard) CheckSigned(resourceID string, token int64, sig string) (guard.Decision, error) {
	return g.WriteSigned(context.Background(), resourceID, token, sig)
}

// CheckSignedContext is WriteSigned without values.
func (g *Guard) CheckSignedContext(ctx context.Context, resourceID string, token int64, sig string) (guard.Decision, error) {
	return g.WriteSigned(ctx, resourceID, token, sig)
}

// badSignature refuses a token that may not be compared, after checking
// the input as a write would; Required is the current mark.
func (g *Guard) badSignature(ctx context.Context, resourceID string, token int64, values []Value) (guard.Decision, error) {
	names := make([]string, len(values))
	for i, v := range values {
		names[i] = v.Name
	}
	if _, err := g.keys(resourceID, names); err != nil {
		return guard.Decision{}, err
	}
	mark, err := g.HighWater(ctx, resourceID)
	if err != nil {
		return guard.Decision{}, err
	}
	return guard.Decision{Accepted: false, Reason: guard.ReasonBadSignature, Presented: token, Required: mark}, nil
}
