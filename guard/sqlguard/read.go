package sqlguard

import (
	"context"
	"fmt"

	"github.com/fenceview/fenceview/guard"
)

// Guarded reads. A read meets a write's rule: the token must be at least
// the mark, and the mark rises to it, in one statement. So a reader of a
// later read phase fences out a writer whose lease ran out, and a later
// writer a reader whose phase ended. Check the read before reading, in
// the transaction that reads, so the mark and the data are one snapshot.
// In signed mode a read also takes a shared grant's token (a read
// phase's, which every reader of the phase holds), which a write may not
// use (guard.ReasonSharedToken).

// CheckSignedRead is CheckSignedReadContext without a context.
func (m *Marks) CheckSignedRead(resourceID string, token int64, sig string) (guard.Decision, error) {
	return m.CheckSignedReadContext(context.Background(), resourceID, token, sig)
}

// CheckSignedReadContext presents token for a read, with its signature
// (text) in signed mode; marks not in signed mode ignore it (a read then
// is CheckContext).
func (m *Marks) CheckSignedReadContext(ctx context.Context, resourceID string, token int64, sig string) (guard.Decision, error) {
	return m.checkSigned(ctx, resourceID, token, sig, true)
}

// Read is a guarded read of the row id: Update without assignments, so
// the row's mark rises to token when token is at least the mark, and a
// lower token is refused (guard.ReasonStale, the row unchanged). Read the
// row after it, in the same transaction (db a *sql.Tx): a refusal means
// the data may already be a later writer's, or the reader's phase is
// over. ErrNotFound means the row does not exist.
func (t *Table) Read(ctx context.Context, db DB, id any, token int64) (guard.Decision, error) {
	return t.update(ctx, db, id, token, nil, nil)
}

// ReadSigned is Read for a signed token (sig: its signature text): a
// shared grant's or an exclusive grant's will do. A table not in signed
// mode ignores the signature.
func (t *Table) ReadSigned(ctx context.Context, db DB, id any, token int64, sig string) (guard.Decision, error) {
	return t.updateSigned(ctx, db, id, token, sig, true, nil, nil)
}

// ReadToken is ReadSigned for the token a lock of the client returned
// (RWMutex.Reader().Token() or a writer's).
func (t *Table) ReadToken(ctx context.Context, db DB, id any, tok guard.SignedToken) (guard.Decision, error) {
	if tok == nil {
		return guard.Decision{}, fmt.Errorf("%w: nil token", ErrInvalid)
	}
	_, n, sig := tok.SignedToken()
	return t.ReadSigned(ctx, db, id, n, sig)
}
