package sqlguard

import (
	"context"
	"fmt"

	"github.com/fenceview/fenceview/guard"
)

// NewTableFrom is NewTable for a table built from a fenceview client
// (keys: a *client.Client): it takes only tokens the client's server
// signed, with the keys the server publishes now (GET /v1/signing-keys),
// for the row's resource, cfg.Resource(id) (required). A bare number, a
// forged or another resource's signature is refused with
// guard.ReasonBadSignature before the row is written, and never moves its
// mark. Present tokens with UpdateToken (the client.Token the lock
// returned) or UpdateSigned. After a key rotation, keys.RefreshVerifier
// on the table's Verifier trusts the new keys.
//
// cfg.AcceptUnsignedTokens turns verification off (for a server that does
// not sign); without it, a server that publishes no keys is
// guard.ErrNoSigningKeys. cfg.Verifier must be nil: the keys are the
// server's.
func NewTableFrom(ctx context.Context, keys guard.KeySource, cfg TableConfig) (*Table, error) {
	if cfg.Verifier != nil {
		return nil, fmt.Errorf("%w: NewTableFrom verifies with the server's keys; a Verifier of your own goes to NewTable", ErrInvalid)
	}
	if cfg.AcceptUnsignedTokens {
		cfg.Resource = nil
		return NewTable(cfg)
	}
	if cfg.Resource == nil {
		return nil, fmt.Errorf("%w: a table that verifies signatures needs Resource, the resource a row's tokens are granted for (e.g. Prefixed(%q))", ErrInvalid, "inventory:")
	}
	v, err := guard.VerifierFrom(ctx, keys)
	if err != nil {
		return nil, err
	}
	cfg.Verifier = v
	return NewTable(cfg)
}

// Prefixed names the resource of row id prefix followed by the id, as
// fmt.Print writes it: Prefixed("inventory:") gives "inventory:42" for
// row 42 (TableConfig.Resource).
func Prefixed(prefix string) func(id any) (string, error) {
	return func(id any) (string, error) { return prefix + fmt.Sprint(id), nil }
}

// Verifier returns the keys a table in signed mode trusts (to refresh
// after a rotation), nil for a table that is not.
func (t *Table) Verifier() *guard.Verifier {
	if t.signed == nil {
		return nil
	}
	return t.signed.verify.Verifier()
}

// UpdateToken is UpdateSigned for the token a lock, permit or election of
// the client returned (client.Token): its number and signature.
func (t *Table) UpdateToken(ctx context.Context, db DB, id any, tok guard.SignedToken, set ...Assignment) (guard.Decision, error) {
	if tok == nil {
		return guard.Decision{}, fmt.Errorf("%w: nil token", ErrInvalid)
	}
	_, n, sig := tok.SignedToken()
	return t.updateSigned(ctx, db, id, n, sig, false, nil, set)
}

// UpdateVersionToken is UpdateVersionSigned for the token a lock of the
// client returned.
func (t *Table) UpdateVersionToken(ctx context.Context, db DB, id any, tok guard.SignedToken, expected int64, set ...Assignment) (guard.Decision, error) {
	if tok == nil {
		return guard.Decision{}, fmt.Errorf("%w: nil token", ErrInvalid)
	}
	_, n, sig := tok.SignedToken()
	return t.updateSigned(ctx, db, id, n, sig, false, &expected, set)
}
