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
	switch g.verify.Mode(resourceID, token, sig, false) {
	case guard.Unsigned:
		return g.refuseUnread(ctx, resourceID, token, values, guard.ReasonBadSignature)
	case guard.Shared:
		return g.refuseUnread(ctx, resourceID, token, values, guard.ReasonSharedToken)
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

// badSignature refuses a token without a good signature.
func (g *Guard) badSignature(ctx context.Context, resourceID string, token int64, values []Value) (guard.Decision, error) {
	return g.refuseUnread(ctx, resourceID, token, values, guard.ReasonBadSignature)
}

// refuseUnread refuses a token that may not be compared, for reason, after
// checking the input as a write would; Required is the current mark.
func (g *Guard) refuseUnread(ctx context.Context, resourceID string, token int64, values []Value, reason string) (guard.Decision, error) {
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
	return guard.Decision{Accepted: false, Reason: reason, Presented: token, Required: mark}, nil
}
