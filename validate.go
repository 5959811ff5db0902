package fenceview

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fenceview/fenceview/guard"
)

// Each request of the domain checks itself: Validate is the one
// validation of its fields, whoever builds it (a transport, an embedder),
// and a refusal names the field at fault by its name on the wire.
// What needs the server's state or clock (an id new to it, a report's
// time) is the issuer's to check.

// Validate checks an acquire: a valid lock and holder, a lease of at most
// MaxLease (0: the default or the current one), a wait not below zero and
// a lock-delay of at most MaxLockDelay. How long a request may wait on
// the server's API (MaxWait) is the API's limit, checked where it is read.
func (r AcquireRequest) Validate() error {
	if err := ValidateLock(r.ResourceID, r.Holder); err != nil {
		return err
	}
	return validateTimes(r.Lease, r.Wait, r.LockDelay)
}

// Validate checks a permit's acquire: a semaphore name whose every slot is
// a valid lock id, 1 to MaxPermits permits, and the times of an acquire.
func (r PermitRequest) Validate() error {
	if err := ValidateSemaphoreName(r.Semaphore); err != nil {
		return err
	}
	if err := ValidateHolder("holder", r.Holder); err != nil {
		return err
	}
	if r.Permits < 1 || r.Permits > MaxPermits {
		return FieldErrorf(EINVALID, "permits", "permits must be between 1 and %d", MaxPermits)
	}
	return validateTimes(r.Lease, r.Wait, r.LockDelay)
}

// Validate checks a campaign: a valid election and candidate, a value of
// at most MaxElectionValue bytes of UTF-8, and the times of an acquire.
func (r CampaignRequest) Validate() error {
	if err := validateID("name", r.Election); err != nil {
		return err
	}
	if err := ValidateHolder("candidate", r.Candidate); err != nil {
		return err
	}
	if err := ValidateElectionValue(r.Value); err != nil {
		return err
	}
	return validateTimes(r.Lease, r.Wait, 0)
}

// Validate checks a fence: a valid lock and token, a known mode and
// access, and the source and holder when given.
func (f Fence) Validate() error {
	if err := validateID("resource", f.ResourceID); err != nil {
		return err
	}
	if err := guard.ValidateToken(f.Token.Token); err != nil {
		return FieldErrorf(EINVALID, "token", "%v", err)
	}
	if _, err := ParseFenceMode(f.Mode); err != nil {
		return withField(err, "mode")
	}
	if _, err := ParseAccess(f.Access); err != nil {
		return withField(err, "access")
	}
	if f.Source != "" {
		if err := ValidateSource(f.Source); err != nil {
			return withField(err, "source")
		}
	}
	if f.Holder != "" {
		if err := ValidateHolder("holder", f.Holder); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks a report: a valid lock and token, a required token not
// below zero, a source, and the reason and access when given. Its time is
// checked against the server's clock by the issuer.
func (r Report) Validate() error {
	if err := validateID("resource", r.ResourceID); err != nil {
		return err
	}
	if err := guard.ValidateToken(r.Token); err != nil {
		return FieldErrorf(EINVALID, "token", "%v", err)
	}
	if r.Required < 0 {
		return FieldErrorf(EINVALID, "required", "required must not be negative")
	}
	if err := ValidateSource(r.Source); err != nil {
		return withField(err, "source")
	}
	if r.Reason != "" {
		if err := ValidateReason(r.Reason); err != nil {
			return err
		}
	}
	if _, err := ParseAccess(r.Access); err != nil {
		return withField(err, "access")
	}
	return nil
}

// ValidateReason accepts a refusal reason: 1..MaxReasonLen bytes of
// lowercase ASCII letters, digits, '-', '_' and '.', starting with a
// letter (e.g. stale-token). Reasons land in metrics labels, the CSV
// export and the dashboard, so their charset needs no escaping there.
func ValidateReason(s string) error {
	if s == "" || len(s) > MaxReasonLen {
		return FieldErrorf(EINVALID, "reason", "reason must be 1..%d bytes", MaxReasonLen)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || i > 0 && (c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.')) {
			return FieldErrorf(EINVALID, "reason", "reason: lowercase letters, digits, '-', '_' and '.', starting with a letter (byte %d)", i)
		}
	}
	return nil
}

// ValidateSemaphoreName accepts a name whose every slot id (name#slot) is
// a valid lock id: a lock id of at most MaxSemaphoreNameLen bytes without
// '#'.
func ValidateSemaphoreName(name string) error {
	if err := validateID("name", name); err != nil {
		return err
	}
	if len(name) > MaxSemaphoreNameLen {
		return FieldErrorf(EINVALID, "name", "a semaphore name is at most %d bytes, so its slots' ids stay within %d", MaxSemaphoreNameLen, guard.MaxResourceIDLen)
	}
	if strings.IndexByte(name, '#') >= 0 {
		return FieldErrorf(EINVALID, "name", "a semaphore name may not contain '#': it separates the name from the slot in a slot's id")
	}
	return nil
}

// ValidateElectionValue accepts a leader's value: at most
// MaxElectionValue bytes of UTF-8.
func ValidateElectionValue(v string) error {
	if len(v) > MaxElectionValue {
		return FieldErrorf(EINVALID, "value", "value is at most %d bytes", MaxElectionValue)
	}
	if !utf8.ValidString(v) {
		return FieldErrorf(EINVALID, "value", "value must be valid UTF-8")
	}
	return nil
}

// ValidateLock checks the lock and holder of any call on a lock (a
// renewal's, a release's).
func ValidateLock(resourceID, holder string) error {
	if err := validateID("resource", resourceID); err != nil {
		return err
	}
	return ValidateHolder("holder", holder)
}

// validateTimes checks an acquire's lease, wait and lock-delay; 0 is none
// (for a lease, the default or the current one).
func validateTimes(lease, wait, lockDelay time.Duration) error {
	if lease < 0 || lease > MaxLease {
		return FieldErrorf(EINVALID, "leaseMs", "leaseMs must be between 1 and %d", MaxLease.Milliseconds())
	}
	if wait < 0 {
		return FieldErrorf(EINVALID, "waitMs", "waitMs must not be negative")
	}
	if lockDelay < 0 || lockDelay > MaxLockDelay {
		return FieldErrorf(EINVALID, "lockDelayMs", "lockDelayMs must be between 0 and %d", MaxLockDelay.Milliseconds())
	}
	return nil
}

func validateID(field, id string) error {
	if err := guard.ValidateResourceID(id); err != nil {
		return FieldErrorf(EINVALID, field, "%s: %v", field, err)
	}
	return nil
}

// ValidateHolder checks a holder's (or candidate's) id, field naming it:
// valid, and not spaces only, which would be blank wherever it is shown.
func ValidateHolder(field, id string) error {
	if err := guard.ValidateHolderID(id); err != nil {
		return FieldErrorf(EINVALID, field, "%s: %v", field, err)
	}
	if strings.Trim(id, " ") == "" {
		return FieldErrorf(EINVALID, field, "%s is blank: use a name that reads as one", field)
	}
	return nil
}

// withField names field in err when it is an *Error naming none.
func withField(err error, field string) error {
	e, ok := err.(*Error)
	if !ok || e.Fields["field"] != nil {
		return err
	}
	named := *e
	named.Fields = map[string]any{"field": field}
	for k, v := range e.Fields {
		named.Fields[k] = v
	}
	return &named
}
