package guard

import "fmt"

// RefusalError is a refused token as a Go error, whatever the reason
// (stale-token, foreign-issuer, scope-mismatch, unissued-token), for code
// paths that report refusals through error values (the Go client, the HTTP
// guard's client side). Every fenceview package returns this one type, so a caller
// matches a refusal with a single errors.As whichever helper produced it.
//
// Reason is usually ReasonStale; other reasons (ReasonUnissued, ...) use the
// same type because the caller's remedy is the same: stop writing, do not
// retry with the same token. Required is the high-water mark the resource
// reported; 0 when it did not say.
type RefusalError struct {
	Resource  string
	Reason    string
	Presented int64
	Required  int64
}

func (e *RefusalError) Error() string {
	reason := e.Reason
	if reason == "" {
		reason = ReasonStale
	}
	if e.Required > 0 {
		return fmt.Sprintf("fencing token %d refused for %q (%s): required %d", e.Presented, e.Resource, reason, e.Required)
	}
	return fmt.Sprintf("fencing token %d refused for %q (%s)", e.Presented, e.Resource, reason)
}

// Err returns nil for an accepted decision and a *RefusalError for a
// refused one, so a caller that prefers errors can write
//
//	if err := d.Err(resourceID); err != nil { return err }
func (d Decision) Err(resourceID string) error {
	if d.Accepted {
		return nil
	}
	return &RefusalError{Resource: resourceID, Reason: d.Reason, Presented: d.Presented, Required: d.Required}
}
