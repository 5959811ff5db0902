package sqlguard

import (
	"context"

	"github.com/fenceview/fenceview/guard"
)

var (
	_ guard.SignedChecker        = (*Marks)(nil)
	_ guard.SignedContextChecker = (*Marks)(nil)
)

// Signed returns the same marks in signed mode: a token is compared only
// with a signature one of v's keys made for its resource and token
// (CheckSigned); anything else is refused with guard.ReasonBadSignature
// before the database is written, and never moves a mark. Verifications
// are remembered in this process, so one holder's repeated writes cost a
// comparison, not an Ed25519 verification. Marks.On keeps the mode.
func (m *Marks) Signed(v *guard.Verifier) *Marks {
	c := *m
	c.verify = guard.NewVerifyCache(v)
	return &c
}

// CheckSigned is CheckSignedContext without a context.
func (m *Marks) CheckSigned(resourceID string, token int64, sig string) (guard.Decision, error) {
	return m.CheckSignedContext(context.Background(), resourceID, token, sig)
}

// CheckSignedContext presents token with its signature (text, as in
// X-Fencing-Signature). Marks not in signed mode ignore the signature.
func (m *Marks) CheckSignedContext(ctx context.Context, resourceID string, token int64, sig string) (guard.Decision, error) {
	if m.verify == nil {
		return m.CheckContext(ctx, resourceID, token)
	}
	if err := guard.ValidateResourceID(resourceID); err != nil {
		return guard.Decision{}, err
	}
	if err := guard.ValidateToken(token); err != nil {
		return guard.Decision{}, err
	}
	if !m.verify.Verify(resourceID, token, sig) {
		return m.badSignature(ctx, resourceID, token)
	}
	return m.record(ctx, resourceID, token)
}

// badSignature is the refusal of a token that may not be compared; like
// every refusal that is not stale-token, Required is the current mark.
func (m *Marks) badSignature(ctx context.Context, resourceID string, token int64) (guard.Decision, error) {
	hwm, err := m.HighWater(ctx, resourceID)
	if err != nil {
		return guard.Decision{}, err
	}
	return guard.Decision{Accepted: false, Reason: guard.ReasonBadSignature, Presented: token, Required: hwm}, nil
}
