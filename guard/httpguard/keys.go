package httpguard

import (
	"context"
	"net/http"

	"github.com/fenceview/fenceview/guard"
)

// MiddlewareFrom is Middleware built from a fenceview client (keys: a
// *client.Client): every request's X-Fencing-Token must carry, in
// X-Fencing-Signature, a signature the client's server made for its
// resource and token, with the keys the server publishes now (GET
// /v1/signing-keys). A bare number, a forged or another resource's
// signature is refused (409, reason bad-signature) before it reaches the
// checker, and never moves a mark. cfg.Checker nil keeps the marks in
// memory (guard.NewSigned); a checker of your own (*sqlguard.Marks) is
// asked only about verified tokens, and a refusal for the signature
// then says required 0 (its mark was not read).
//
// cfg.AcceptUnsignedTokens turns verification off (for a server that does
// not sign); without it, a server that publishes no keys is
// guard.ErrNoSigningKeys.
func MiddlewareFrom(ctx context.Context, keys guard.KeySource, cfg Config) (func(http.Handler) http.Handler, error) {
	if cfg.AcceptUnsignedTokens {
		if cfg.Checker == nil {
			cfg.Checker = guard.New()
		}
		return Middleware(cfg), nil
	}
	v, err := guard.VerifierFrom(ctx, keys)
	if err != nil {
		return nil, err
	}
	if cfg.Checker == nil {
		cfg.Checker = guard.NewSigned(v)
	} else {
		cfg.Checker = &verifying{next: cfg.Checker, verify: guard.NewVerifyCache(v)}
	}
	return Middleware(cfg), nil
}

// verifying lets through to next only tokens whose signature verify
// accepts.
type verifying struct {
	next   guard.Checker
	verify *guard.VerifyCache
}

var (
	_ guard.SignedContextChecker     = (*verifying)(nil)
	_ guard.SignedReadContextChecker = (*verifying)(nil)
)

// Check refuses a token without a signature, as every guard in signed
// mode does.
func (v *verifying) Check(resourceID string, token int64) (guard.Decision, error) {
	return v.CheckSignedContext(context.Background(), resourceID, token, "")
}

func (v *verifying) CheckSignedContext(ctx context.Context, resourceID string, token int64, sig string) (guard.Decision, error) {
	if err := guard.ValidateResourceID(resourceID); err != nil {
		return guard.Decision{}, err
	}
	if err := guard.ValidateToken(token); err != nil {
		return guard.Decision{}, err
	}
	switch v.verify.Mode(resourceID, token, sig, false) {
	case guard.Unsigned:
		return guard.Decision{Accepted: false, Reason: guard.ReasonBadSignature, Presented: token}, nil
	case guard.Shared: // a read phase's token may not write
		return guard.Decision{Accepted: false, Reason: guard.ReasonSharedToken, Presented: token}, nil
	}
	return guard.CheckSignedWith(ctx, v.next, resourceID, token, sig)
}

// CheckSignedReadContext lets a read through to next with a shared
// grant's signature as well as an exclusive one's.
func (v *verifying) CheckSignedReadContext(ctx context.Context, resourceID string, token int64, sig string) (guard.Decision, error) {
	if err := guard.ValidateResourceID(resourceID); err != nil {
		return guard.Decision{}, err
	}
	if err := guard.ValidateToken(token); err != nil {
		return guard.Decision{}, err
	}
	if v.verify.Mode(resourceID, token, sig, true) == guard.Unsigned {
		return guard.Decision{Accepted: false, Reason: guard.ReasonBadSignature, Presented: token}, nil
	}
	return guard.CheckReadWith(ctx, v.next, resourceID, token, sig)
}
