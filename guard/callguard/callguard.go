// Package callguard limits the damage a stale lock holder can do to a
// resource that cannot check a fencing token itself: a third-party HTTP API,
// a payment gateway, an SMTP server, a legacy service.
//
// Such a resource cannot be fenced; exclusion cannot be guaranteed. What can
// be done, and what Call does:
//
//  1. Record the pending token for the resource with a conditional update in
//     a store you control (a guard.Checker: *sqlguard.Marks, *guard.Guard), before
//     the call. If a newer token is already recorded, refuse right there:
//     the stale holder never reaches the external system.
//  2. Call out with the idempotency key "<resource>:<token>"
//     (guard.IdempotencyKey), so a retry of the same grant is applied once by
//     a system that honours idempotency keys.
//
// What remains: a holder that records its token, then pauses, then calls
// after a newer holder has recorded and called, still reaches the external
// system. Its key differs from the newer holder's, so the external system
// sees two distinct operations. Step 1 narrows the window to the time
// between recording and calling; it does not close it.
//
// # The outbox alternative
//
// To close it, move the external effect behind something you can fence.
// Write the intent (the request, its idempotency key) to an outbox table in
// your own database, in the same transaction as a fenced write
// (sqlguard.Table.Update, or sqlguard.Marks.On(tx)), so a stale holder's
// intent is refused with its write. A separate relay reads the outbox and
// performs the calls with their idempotency keys, marking each done; it may
// retry freely, because the key makes a repeat harmless. The holder never
// calls out itself. The cost is latency and a relay to run; the gain is that
// only writes the fence accepted ever leave the building.
package callguard

import (
	"context"
	"fmt"

	"github.com/fenceview/fenceview/guard"
)

// HeaderIdempotencyKey is the request header most HTTP APIs read the
// idempotency key from.
const HeaderIdempotencyKey = "Idempotency-Key"

// Call records token as pending for resourceID through rec and, only if it
// was accepted, runs call with the idempotency key "<resource>:<token>".
//
// It returns the decision and:
//   - a *guard.RefusalError when a newer token was already recorded (call
//     did not run: stop, do not retry with this token);
//   - call's error, wrapped, when the call failed (it is safe to retry Call
//     with the same token: the record accepts an equal token and the key is
//     the same, so an external system honouring it applies the effect once);
//   - an input or recorder error, with call not run.
func Call(ctx context.Context, rec guard.Checker, resourceID string, token int64, call func(ctx context.Context, idempotencyKey string) error) (guard.Decision, error) {
	return CallSigned(ctx, rec, resourceID, token, "", call)
}

// CallSigned is Call for a signed token: with a recorder in signed mode
// (guard.NewSigned, sqlguard Marks.Signed), a token whose signature does not
// verify is refused (guard.ReasonBadSignature) and call does not run.
func CallSigned(ctx context.Context, rec guard.Checker, resourceID string, token int64, signature string, call func(ctx context.Context, idempotencyKey string) error) (guard.Decision, error) {
	if err := guard.ValidateResourceID(resourceID); err != nil {
		return guard.Decision{}, err
	}
	if err := guard.ValidateToken(token); err != nil {
		return guard.Decision{}, err
	}
	if err := ctx.Err(); err != nil {
		return guard.Decision{}, err
	}
	d, err := guard.CheckSignedWith(ctx, rec, resourceID, token, signature)
	if err != nil {
		return guard.Decision{}, fmt.Errorf("callguard: record pending token for %q: %w", resourceID, err)
	}
	if !d.Accepted {
		return d, d.Err(resourceID)
	}
	if err := call(ctx, guard.IdempotencyKey(resourceID, token)); err != nil {
		return d, fmt.Errorf("callguard: call for %q with token %d: %w", resourceID, token, err)
	}
	return d, nil
}
