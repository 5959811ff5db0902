package issuer

import (
	"context"
	"time"

	"github.com/fenceview/fenceview"
)

// AcquirePermit grants holder the lowest free slot of the semaphore
// req.Semaphore, waiting up to req.Wait, first come first served, for any
// slot. The grant is the slot's (ResourceID fenceview.SlotID(name, slot)),
// signed as any lock's. The first acquire of a name fixes its permits;
// another count is refused (ECONFLICT "permits mismatch", field permits).
// All slots taken: ECONFLICT "no permit free", field permits.
func (s *Service) AcquirePermit(ctx context.Context, req fenceview.PermitRequest) (fenceview.Grant, error) {
	return fenceview.Grant{}, errNotYet
}

// ReleasePermit gives up holder's hold of slot of the semaphore name: the
// slot's lock's Release.
func (s *Service) ReleasePermit(ctx context.Context, name, holder string, slot int) (int, error) {
	return 0, errNotYet
}

// SetPermits changes the permits of the semaphore name (an admin's call).
// Held slots above the new count stay held until released and are not
// granted again; waiters are served by new slots at once.
func (s *Service) SetPermits(ctx context.Context, name string, permits int) (fenceview.Semaphore, error) {
	return fenceview.Semaphore{}, errNotYet
}

// Semaphore returns the state of the semaphore name: ENOTFOUND when no
// acquire ever named it.
func (s *Service) Semaphore(name string) (fenceview.Semaphore, error) {
	return fenceview.Semaphore{}, errNotYet
}

// AcquireAll grants every lock of req.ResourceIDs to req.Holder in one
// atomic change, each with a new token, in the order asked, or none:
// ECONFLICT "lock held", field held ([]map with resourceId, holder,
// expiresAt). With req.Wait it waits until all are free at once, holding
// none meanwhile.
func (s *Service) AcquireAll(ctx context.Context, req fenceview.AcquireAllRequest) ([]fenceview.Grant, error) {
	return nil, errNotYet
}

// ReleaseAll gives up one hold of each of resourceIDs that holder holds,
// in one atomic change.
func (s *Service) ReleaseAll(ctx context.Context, resourceIDs []string, holder string) (fenceview.Released, error) {
	return fenceview.Released{}, errNotYet
}

// Campaign makes req.Candidate the leader of req.Election once its lock is
// granted (waiting up to req.Wait, first come first served): the term is
// the grant's token. A campaign by the current leader keeps its term and
// sets its value. Another leads and the wait is over: ECONFLICT "lock
// held", field leader.
func (s *Service) Campaign(ctx context.Context, req fenceview.CampaignRequest) (fenceview.Leader, fenceview.Grant, error) {
	return fenceview.Leader{}, fenceview.Grant{}, errNotYet
}

// Proclaim changes the leader's value, same term; anyone but the leader:
// ECONFLICT "not leader".
func (s *Service) Proclaim(ctx context.Context, election, candidate, value string) (fenceview.Leader, error) {
	return fenceview.Leader{}, errNotYet
}

// Resign ends candidate's leadership of election (every hold released);
// the next candidate waiting is elected.
func (s *Service) Resign(ctx context.Context, election, candidate string) error {
	return errNotYet
}

// RenewLeadership extends the leader's lease (lease 0: the current
// length), same term.
func (s *Service) RenewLeadership(ctx context.Context, election, candidate string, lease time.Duration) (fenceview.Leader, fenceview.Grant, error) {
	return fenceview.Leader{}, fenceview.Grant{}, errNotYet
}

// Leader returns the leader of election, nil when nobody leads.
func (s *Service) Leader(election string) (*fenceview.Leader, error) {
	return nil, errNotYet
}

var errNotYet = fenceview.Errorf(fenceview.EINTERNAL, "not implemented yet")
