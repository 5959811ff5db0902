package client

import (
	"errors"
	"testing"
	"time"
)

// Each 409 of contract v3 decodes to its typed error with its members.
func TestConflictDecoding(t *testing.T) {
	at := time.Date(2026, 9, 24, 6, 14, 52, 0, time.UTC)
	for _, tc := range []struct {
		body  string
		check func(error) bool
	}{
		{`{"error":"lock delay","availableAt":"2026-09-24T06:14:52.000Z"}`, func(err error) bool {
			var e *LockDelayError
			return errors.As(err, &e) && e.AvailableAt.Equal(at) && e.Resource == "r" && errors.Is(err, ErrLockDelay)
		}},
		{`{"error":"no permit free","permits":4}`, func(err error) bool {
			var e *NoPermitError
			return errors.As(err, &e) && e.Permits == 4 && errors.Is(err, ErrNoPermit)
		}},
		{`{"error":"permits mismatch","permits":4}`, func(err error) bool {
			var e *PermitsMismatchError
			return errors.As(err, &e) && e.Permits == 4 && e.Asked == 2 && errors.Is(err, ErrPermitsMismatch)
		}},
		{`{"error":"lock held","held":[{"resourceId":"a","holder":"h","expiresAt":"2026-09-24T06:14:52.000Z"},{"resourceId":"b","holder":"i"}]}`, func(err error) bool {
			var e *LocksHeldError
			return errors.As(err, &e) && len(e.Held) == 2 && e.Held[0] == HeldError{Resource: "a", Holder: "h", ExpiresAt: at} && e.Held[1].Resource == "b" && errors.Is(err, ErrHeld)
		}},
		{`{"error":"lock held","leader":{"candidate":"n1","value":"v","term":7,"since":"2026-09-24T06:14:52.000Z","expiresAt":"2026-09-24T06:14:52.000Z"}}`, func(err error) bool {
			var e *LeaderError
			return errors.As(err, &e) && e.Leader.Candidate == "n1" && e.Leader.Term == 7 && e.Leader.Value == "v" && e.Leader.Since.Equal(at) && errors.Is(err, ErrHeld)
		}},
		{`{"error":"lock held","holder":"h","expiresAt":"2026-09-24T06:14:52.000Z"}`, func(err error) bool {
			var e *HeldError
			return errors.As(err, &e) && e.Holder == "h" && e.ExpiresAt.Equal(at)
		}},
		{`{"error":"not leader"}`, func(err error) bool { return errors.Is(err, ErrNotLeader) }},
		{`{"error":"lock not held"}`, func(err error) bool { return errors.Is(err, ErrNotHeld) }},
		{`not json`, func(err error) bool { return errors.Is(err, ErrNotHeld) && !errors.Is(err, ErrHeld) }},
	} {
		if err := conflict([]byte(tc.body), "r", 2, ErrNotHeld); !tc.check(err) {
			t.Errorf("%s: got %T %v", tc.body, err, err)
		}
	}
}
