package redisguard

import (
	"context"
	"fmt"

	"github.com/fenceview/fenceview/guard"
)

// NewFrom is New for a guard built from a fenceview client (keys: a
// *client.Client): it takes only tokens the client's server signed, with
// the keys the server publishes now (GET /v1/signing-keys). A bare number,
// a forged or another resource's signature is refused with
// guard.ReasonBadSignature before Redis is written, and never moves a
// mark. Present tokens with WriteToken (the client.Token the lock
// returned) or WriteSigned.
//
// cfg.AcceptUnsignedTokens turns verification off (for a server that does
// not sign); without it, a server that publishes no keys is
// guard.ErrNoSigningKeys. cfg.Verifier must be nil: the keys are the
// server's.
func NewFrom(ctx context.Context, keys guard.KeySource, cfg Config) (*Guard, error) {
	if cfg.Verifier != nil {
		return nil, fmt.Errorf("%w: NewFrom verifies with the server's keys; a Verifier of your own goes to New", ErrInvalid)
	}
	if !cfg.AcceptUnsignedTokens {
		v, err := guard.VerifierFrom(ctx, keys)
		if err != nil {
			return nil, err
		}
		cfg.Verifier = v
	}
	return New(cfg)
}

// Verifier returns the keys a guard in signed mode trusts (to refresh
// after a rotation), nil for a guard that is not.
func (g *Guard) Verifier() *guard.Verifier {
	if g.verify == nil {
		return nil
	}
	return g.verify.Verifier()
}

// WriteToken is WriteSigned for the token a lock of the client returned
// (client.Token): it writes the values of the token's own resource.
func (g *Guard) WriteToken(ctx context.Context, tok guard.SignedToken, values ...Value) (guard.Decision, error) {
	if tok == nil {
		return guard.Decision{}, fmt.Errorf("%w: nil token", ErrInvalid)
	}
	resourceID, n, sig := tok.SignedToken()
	return g.WriteSigned(ctx, resourceID, n, sig, values...)
}
