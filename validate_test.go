package fenceview

import (
	"strings"
	"testing"
	"time"

	"github.com/fenceview/fenceview/guard"
)

// Every request's Validate refuses what it must with EINVALID naming the
// field at fault by its name on the wire, and takes a valid request.
func TestValidateNamesTheField(t *testing.T) {
	acquire := AcquireRequest{ResourceID: "r", Holder: "h", Lease: time.Minute, Wait: time.Second, LockDelay: time.Second}
	permit := PermitRequest{Semaphore: "jobs", Holder: "h", Permits: 3, Lease: time.Minute}
	campaign := CampaignRequest{Election: "e", Candidate: "c", Value: "v", Lease: time.Minute}
	fence := Fence{ResourceID: "r", Token: guard.Token{Token: 7}, Holder: "h", Source: "api:host", Mode: FenceModeCurrent, Access: AccessRead}
	report := Report{ResourceID: "r", Token: 7, Required: 8, Reason: "stale-token", Source: "plugin", Access: AccessWrite}
	for name, v := range map[string]interface{ Validate() error }{
		"acquire": acquire, "acquire, defaults": AcquireRequest{ResourceID: "r", Holder: "h"}, "permit": permit,
		"campaign": campaign, "fence": fence, "fence, defaults": Fence{ResourceID: "r", Token: guard.Token{Token: 1}}, "report": report,
	} {
		if err := v.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, c := range []struct {
		name, field string
		req         interface{ Validate() error }
	}{
		{"acquire: no resource", "resource", AcquireRequest{Holder: "h"}},
		{"acquire: blank holder", "holder", AcquireRequest{ResourceID: "r", Holder: "   "}},
		{"acquire: holder with a newline", "holder", AcquireRequest{ResourceID: "r", Holder: "a\nb"}},
		{"acquire: negative lease", "leaseMs", AcquireRequest{ResourceID: "r", Holder: "h", Lease: -time.Millisecond}},
		{"acquire: lease above the longest", "leaseMs", AcquireRequest{ResourceID: "r", Holder: "h", Lease: MaxLease + time.Millisecond}},
		{"acquire: negative wait", "waitMs", AcquireRequest{ResourceID: "r", Holder: "h", Wait: -1}},
		{"acquire: lock-delay above the longest", "lockDelayMs", AcquireRequest{ResourceID: "r", Holder: "h", LockDelay: MaxLockDelay + 1}},
		{"permit: name with #", "name", PermitRequest{Semaphore: "a#b", Holder: "h", Permits: 1}},
		{"permit: name too long", "name", PermitRequest{Semaphore: strings.Repeat("s", MaxSemaphoreNameLen+1), Holder: "h", Permits: 1}},
		{"permit: no permits", "permits", PermitRequest{Semaphore: "jobs", Holder: "h"}},
		{"permit: too many permits", "permits", PermitRequest{Semaphore: "jobs", Holder: "h", Permits: MaxPermits + 1}},
		{"permit: blank holder", "holder", PermitRequest{Semaphore: "jobs", Holder: " ", Permits: 1}},
		{"campaign: no election", "name", CampaignRequest{Candidate: "c"}},
		{"campaign: no candidate", "candidate", CampaignRequest{Election: "e"}},
		{"campaign: value too long", "value", CampaignRequest{Election: "e", Candidate: "c", Value: strings.Repeat("v", MaxElectionValue+1)}},
		{"campaign: value not UTF-8", "value", CampaignRequest{Election: "e", Candidate: "c", Value: "\xff"}},
		{"campaign: negative wait", "waitMs", CampaignRequest{Election: "e", Candidate: "c", Wait: -1}},
		{"fence: no resource", "resource", Fence{Token: guard.Token{Token: 1}}},
		{"fence: token zero", "token", Fence{ResourceID: "r"}},
		{"fence: unknown mode", "mode", Fence{ResourceID: "r", Token: guard.Token{Token: 1}, Mode: "strict"}},
		{"fence: unknown access", "access", Fence{ResourceID: "r", Token: guard.Token{Token: 1}, Access: "READ"}},
		{"fence: bad source", "source", Fence{ResourceID: "r", Token: guard.Token{Token: 1}, Source: "a b"}},
		{"fence: blank holder", "holder", Fence{ResourceID: "r", Token: guard.Token{Token: 1}, Holder: "  "}},
		{"report: token negative", "token", Report{ResourceID: "r", Token: -1, Source: "p"}},
		{"report: required negative", "required", Report{ResourceID: "r", Token: 1, Required: -1, Source: "p"}},
		{"report: no source", "source", Report{ResourceID: "r", Token: 1}},
		{"report: reason in capitals", "reason", Report{ResourceID: "r", Token: 1, Source: "p", Reason: "Stale"}},
		{"report: unknown access", "access", Report{ResourceID: "r", Token: 1, Source: "p", Access: "both"}},
	} {
		err := c.req.Validate()
		e, ok := err.(*Error)
		if !ok || e.Code != EINVALID || e.Fields["field"] != c.field {
			t.Errorf("%s: %v (fields %v), want EINVALID naming %q", c.name, err, fieldsOf(err), c.field)
		}
	}
}

func fieldsOf(err error) map[string]any {
	if e, ok := err.(*Error); ok {
		return e.Fields
	}
	return nil
}
