package auth

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// One key's logins, however many, end only that key's own sessions: the
// flood that used to end every session, the admin's included (10,000
// logins with a viewer key), leaves the admin's and another viewer's.
func TestSessionsOfOneKeyCannotEvictAnothers(t *testing.T) {
	ctx := context.Background()
	k, now, clock := clockedKeyring()
	flood, floodSecret, _ := k.Create(ctx, "flood", Viewer, nil)
	other, otherSecret, _ := k.Create(ctx, "other", Viewer, nil)
	s := NewSessions(k, 10_000, time.Hour, clock) // the server's table size
	adminID, _, err := s.Login("10.0.0.1", "tok")
	if err != nil {
		t.Fatal(err)
	}
	otherID, _, _ := s.Login("10.0.0.2", otherSecret)
	for i := 0; i < 10_000; i++ {
		if _, _, err := s.Login("10.0.0.3", floodSecret); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.LenOf(flood.ID); got != defaultSessionsPerKey {
		t.Fatalf("flooding key holds %d sessions, want %d", got, defaultSessionsPerKey)
	}
	if s.Len() != defaultSessionsPerKey+2 {
		t.Fatalf("%d sessions, want %d", s.Len(), defaultSessionsPerKey+2)
	}
	if p, err := s.Principal(adminID); err != nil || p.Role != Admin {
		t.Fatalf("admin's session after the flood: %v", err)
	}
	if p, err := s.Principal(otherID); err != nil || p.KeyID != other.ID {
		t.Fatalf("other key's session after the flood: %v", err)
	}

	// A full table makes room from the key holding the most sessions.
	s = NewSessions(k, 10, time.Hour, clock)
	s.PerKey = 8
	adminID, _, _ = s.Login("a", "tok")
	for i := 0; i < 3; i++ {
		s.Login("b", otherSecret)
	}
	for i := 0; i < 20; i++ {
		s.Login("c", floodSecret)
		*now = now.Add(time.Second)
	}
	if s.Len() != 10 || s.LenOf("admin") != 1 || s.LenOf(other.ID) != 3 || s.LenOf(flood.ID) != 6 {
		t.Fatalf("full table: %d sessions, admin %d, other %d, flood %d", s.Len(), s.LenOf("admin"), s.LenOf(other.ID), s.LenOf(flood.ID))
	}
	if _, err := s.Principal(adminID); err != nil {
		t.Fatalf("admin's session in a full table: %v", err)
	}
}

// Logins are limited per address and per key, bad credentials per
// address; each refusal says when to retry, and the budget comes back
// with time (an injected clock).
func TestThrottleBudgets(t *testing.T) {
	ctx := context.Background()
	k, now, clock := clockedKeyring()
	_, secret, _ := k.Create(ctx, "v", Viewer, nil)
	s := NewSessions(k, 10_000, time.Hour, clock)
	s.Throttle = NewThrottle(clock)

	// Per address: LoginBurst logins, then a LimitError, good key or not.
	for i := 0; i < LoginBurst; i++ {
		if _, _, err := s.Login("10.0.0.1", secret); err != nil {
			t.Fatalf("login %d: %v", i, err)
		}
	}
	_, _, err := s.Login("10.0.0.1", secret)
	var le *LimitError
	if !errors.As(err, &le) || le.RetryAfter != LoginInterval {
		t.Fatalf("login %d from one address: %v, want a limit with retry after %v", LoginBurst+1, err, LoginInterval)
	}
	// Per key: from other addresses the key is out of logins too.
	if _, _, err := s.Login("10.0.0.2", secret); !errors.As(err, &le) {
		t.Fatalf("login with the key from another address: %v, want a limit", err)
	}
	// ... but the admin token, from there, is not.
	if _, _, err := s.Login("10.0.0.2", "tok"); err != nil {
		t.Fatalf("admin login from another address: %v", err)
	}
	*now = now.Add(LoginInterval)
	if _, _, err := s.Login("10.0.0.1", secret); err != nil {
		t.Fatalf("login after the interval: %v", err)
	}

	// Bad credentials: FailureBurst, then refused before being checked.
	th := NewThrottle(clock)
	for i := 0; i < FailureBurst; i++ {
		if err := th.CheckCredential("10.0.0.9"); err != nil {
			t.Fatalf("check %d: %v", i, err)
		}
		th.BadCredential("10.0.0.9")
	}
	if err := th.CheckCredential("10.0.0.9"); !errors.As(err, &le) || le.RetryAfter != FailureInterval {
		t.Fatalf("after %d bad credentials: %v", FailureBurst, err)
	}
	if err := th.CheckCredential("10.0.0.10"); err != nil {
		t.Fatalf("another address: %v", err)
	}
	*now = now.Add(FailureInterval)
	if err := th.CheckCredential("10.0.0.9"); err != nil {
		t.Fatalf("after the interval: %v", err)
	}
}

// The tables stay bounded whatever the number of addresses: past
// maxBuckets, newcomers share one bucket.
func TestThrottleTablesBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	th := NewThrottle(func() time.Time { return now })
	for i := 0; i < 3*maxBuckets; i++ {
		th.BadCredential(fmt.Sprintf("10.%d.%d.%d", i>>16, i>>8&255, i&255))
	}
	if n := th.failures.size(); n != maxBuckets {
		t.Fatalf("%d buckets, want %d", n, maxBuckets)
	}
	// Once their buckets are full again, old addresses are forgotten.
	now = now.Add(FailureBurst * FailureInterval)
	th.BadCredential("192.0.2.1")
	if n := th.failures.size(); n != 1 {
		t.Fatalf("%d buckets after they refilled, want 1", n)
	}
}

func TestClientOf(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.7:5555":                 "10.0.0.7",
		"[::ffff:10.0.0.7]:1":           "10.0.0.7",
		"[2001:db8:1:2:3:4:5:6]:443":    "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1%eth0]:1": "2001:db8:1:2::/64",
		"not-an-address":                "not-an-address",
	} {
		if got := ClientOf(in); got != want {
			t.Errorf("ClientOf(%q) = %q, want %q", in, got, want)
		}
	}
}
