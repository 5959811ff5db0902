package sqlguard

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/fenceview/fenceview/guard"
)

// Marks in signed mode checks writes and guarded reads (read.go).
var (
	_ guard.SignedChecker            = (*Marks)(nil)
	_ guard.SignedContextChecker     = (*Marks)(nil)
	_ guard.SignedReadChecker        = (*Marks)(nil)
	_ guard.SignedReadContextChecker = (*Marks)(nil)
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
	return m.checkSigned(ctx, resourceID, token, sig, false)
}

// checkSigned presents token with its signature for a read (read) or a
// write.
func (m *Marks) checkSigned(ctx context.Context, resourceID string, token int64, sig string, read bool) (guard.Decision, error) {
	if m.verify == nil {
		return m.CheckContext(ctx, resourceID, token)
	}
	if err := guard.ValidateResourceID(resourceID); err != nil {
		return guard.Decision{}, err
	}
	if err := guard.ValidateToken(token); err != nil {
		return guard.Decision{}, err
	}
	if reason := refusal(m.verify.Mode(resourceID, token, sig, read), read); reason != "" {
		return m.refuseUnread(ctx, resourceID, token, reason)
	}
	return m.record(ctx, resourceID, token)
}

// refusal is why a read (read) or a write with a signature that proved
// mode may not be compared, or "" when it may: a read takes a shared
// grant's token as well as an exclusive one's.
func refusal(mode guard.Mode, read bool) string {
	switch mode {
	case guard.Exclusive:
		return ""
	case guard.Shared:
		if read {
			return ""
		}
		return guard.ReasonSharedToken
	}
	return guard.ReasonBadSignature
}

// badSignature is the refusal of a token without a good signature.
func (m *Marks) badSignature(ctx context.Context, resourceID string, token int64) (guard.Decision, error) {
	return m.refuseUnread(ctx, resourceID, token, guard.ReasonBadSignature)
}

// refuseUnread is the refusal of a token that may not be compared, for
// reason; like every refusal that is not stale-token, Required is the
// current mark.
func (m *Marks) refuseUnread(ctx context.Context, resourceID string, token int64, reason string) (guard.Decision, error) {
	hwm, err := m.HighWater(ctx, resourceID)
	if err != nil {
		return guard.Decision{}, err
	}
	return guard.Decision{Accepted: false, Reason: reason, Presented: token, Required: hwm}, nil
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
	return t.updateSigned(ctx, db, id, token, sig, false, nil, set)
}

// UpdateVersionSigned is UpdateVersion for a signed token.
func (t *Table) UpdateVersionSigned(ctx context.Context, db DB, id any, token, expected int64, sig string, set ...Assignment) (guard.Decision, error) {
	return t.updateSigned(ctx, db, id, token, sig, false, &expected, set)
}

// updateSigned is every signed write's and read's path (a read: no version,
// nothing set).
func (t *Table) updateSigned(ctx context.Context, db DB, id any, token int64, sig string, read bool, version *int64, set []Assignment) (guard.Decision, error) {
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
	if reason := refusal(t.signed.verify.Mode(resource, token, sig, read), read); reason != "" {
		return t.refuseUnread(ctx, db, id, token, reason)
	}
	return t.write(ctx, db, id, token, version, set)
}

// badSignature refuses a token without a good signature.
func (t *Table) badSignature(ctx context.Context, db DB, id any, token int64) (guard.Decision, error) {
	return t.refuseUnread(ctx, db, id, token, guard.ReasonBadSignature)
}

// refuseUnread refuses a token that may not be compared, for reason;
// Required is the row's mark, read now. A missing row is ErrNotFound, as
// for Update.
func (t *Table) refuseUnread(ctx context.Context, db DB, id any, token int64, reason string) (guard.Decision, error) {
	a := &args{d: t.d}
	var hwm int64
	err := db.QueryRowContext(ctx, "SELECT "+t.tokCol+" FROM "+t.table+" WHERE "+t.idCol+" = "+a.add(id), a.vals...).Scan(&hwm)
	if errors.Is(err, sql.ErrNoRows) {
		return guard.Decision{}, fmt.Errorf("%w: %s %s = %v", ErrNotFound, t.name, t.idCol, id)
	}
	if err != nil {
		return guard.Decision{}, fmt.Errorf("sqlguard: read mark of %s: %w", t.name, err)
	}
	return guard.Decision{Accepted: false, Reason: reason, Presented: token, Required: hwm}, nil
}
