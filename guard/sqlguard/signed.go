package sqlguard

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

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

// signedRows is a Table's signed mode (TableConfig.Verifier): the keys it
// trusts and how a row id names the resource its tokens are signed for.
type signedRows struct {
	verify   *guard.VerifyCache
	resource func(id any) (string, error)
}

// UpdateSigned is Update for a signed token (sig: its signature text). A
// table not in signed mode ignores the signature.
func (t *Table) UpdateSigned(ctx context.Context, db DB, id any, token int64, sig string, set ...Assignment) (guard.Decision, error) {
	return t.updateSigned(ctx, db, id, token, sig, nil, set)
}

// UpdateVersionSigned is UpdateVersion for a signed token.
func (t *Table) UpdateVersionSigned(ctx context.Context, db DB, id any, token, expected int64, sig string, set ...Assignment) (guard.Decision, error) {
	return t.updateSigned(ctx, db, id, token, sig, &expected, set)
}

func (t *Table) updateSigned(ctx context.Context, db DB, id any, token int64, sig string, version *int64, set []Assignment) (guard.Decision, error) {
	if t.signed == nil {
		return t.update(ctx, db, id, token, version, set)
	}
	if err := guard.ValidateToken(token); err != nil {
		return guard.Decision{}, err
	}
	if id == nil {
		return guard.Decision{}, fmt.Errorf("%w: nil row id", ErrInvalid)
	}
	resource, err := t.signed.resource(id)
	if err == nil {
		err = guard.ValidateResourceID(resource)
	}
	if err != nil {
		return guard.Decision{}, fmt.Errorf("%w: resource of row %v: %w", ErrInvalid, id, err)
	}
	if !t.signed.verify.Verify(resource, token, sig) {
		return t.badSignature(ctx, db, id, token)
	}
	return t.write(ctx, db, id, token, version, set)
}

// badSignature refuses a token that may not be compared; Required is the
// row's mark, read now. A missing row is ErrNotFound, as for Update.
func (t *Table) badSignature(ctx context.Context, db DB, id any, token int64) (guard.Decision, error) {
	a := &args{d: t.d}
	var hwm int64
	err := db.QueryRowContext(ctx, "SELECT "+t.tokCol+" FROM "+t.table+" WHERE "+t.idCol+" = "+a.add(id), a.vals...).Scan(&hwm)
	if errors.Is(err, sql.ErrNoRows) {
		return guard.Decision{}, fmt.Errorf("%w: %s %s = %v", ErrNotFound, t.name, t.idCol, id)
	}
	if err != nil {
		return guard.Decision{}, fmt.Errorf("sqlguard: read mark of %s: %w", t.name, err)
	}
	return guard.Decision{Accepted: false, Reason: guard.ReasonBadSignature, Presented: token, Required: hwm}, nil
}
