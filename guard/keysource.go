package guard

import (
	"context"
	"errors"
	"fmt"
)

// KeySource is where a guard built from a fenceview client gets the keys
// it trusts: *client.Client is one (it reads the server's GET
// /v1/signing-keys). RefreshVerifier makes v trust exactly the source's
// current keys.
type KeySource interface {
	RefreshVerifier(ctx context.Context, v *Verifier) error
}

// SignedToken is a token as its holder presents it to a guard: the
// resource it was granted for, its number, and the issuer's signature
// ("" from a server that does not sign). client.Token, which a lock,
// permit or election returns, is one.
type SignedToken interface {
	SignedToken() (resourceID string, token int64, signature string)
}

// ErrNoSigningKeys is the refusal to build a verifying guard from a
// source that publishes no signing keys: it would refuse every token.
var ErrNoSigningKeys = errors.New("guard: the server publishes no signing keys, so a verifying guard would refuse every token; " +
	"for a server that does not sign, accept unsigned tokens explicitly (AcceptUnsignedTokens)")

// VerifierFrom returns a verifier of src's current keys, for a guard built
// from a client; ErrNoSigningKeys when there are none. After a rotation
// or a removal, src.RefreshVerifier updates it in place.
func VerifierFrom(ctx context.Context, src KeySource) (*Verifier, error) {
	if src == nil {
		return nil, fmt.Errorf("%w: nil key source", ErrNoSigningKeys)
	}
	v := &Verifier{}
	if err := src.RefreshVerifier(ctx, v); err != nil {
		return nil, fmt.Errorf("guard: reading the signing keys: %w", err)
	}
	if len(v.Keys()) == 0 {
		return nil, ErrNoSigningKeys
	}
	return v, nil
}
