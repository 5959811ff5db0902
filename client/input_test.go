package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenceview/fenceview/client"
)

// Input the client refuses before sending is the *APIError the server
// would answer: code, field and sentinels alike, and nothing is sent.
func TestInputRefusedBeforeSendingIsAnAPIError(t *testing.T) {
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		http.Error(w, "nothing should reach the server", http.StatusTeapot)
	}))
	defer srv.Close()
	c, err := client.New(client.Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	long := strings.Repeat("h", 100)
	for _, tc := range []struct {
		name, code, field string
		call              func() error
	}{
		{"a 100-byte holder", "invalid-request", "holder", func() error { _, err := c.Mutex("r", long).Lock(ctx); return err }},
		{"a 161-byte resource", "invalid-request", "resource", func() error { _, err := c.State(ctx, strings.Repeat("r", 161)); return err }},
		{"a token of -3", "invalid-token", "token", func() error { _, err := c.Fence(ctx, "r", -3); return err }},
		{"a negative wait", "invalid-request", "waitMs", func() error { _, err := c.Mutex("r", "h").TryLock(ctx, -time.Second, 0); return err }},
		{"a negative lease", "invalid-request", "leaseMs", func() error { _, err := c.Mutex("r", "h").TryLock(ctx, 0, -time.Second); return err }},
		{"no permits", "invalid-request", "permits", func() error { _, err := c.Semaphore("jobs", 0).TryAcquire(ctx, 0); return err }},
		{"a resource listed twice", "invalid-request", "resources", func() error { _, err := c.LockAll(ctx, "h", "a", "a"); return err }},
		{"a 5000-byte leader value", "invalid-request", "value", func() error {
			_, err := c.Election("e").Campaign(ctx, strings.Repeat("v", 5000))
			return err
		}},
		{"a floor of -1", "invalid-request", "floor", func() error { _, err := c.Reset(ctx, "r", -1); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var ae *client.APIError
			if !errors.As(err, &ae) {
				t.Fatalf("%v (%T), want an *APIError", err, err)
			}
			if ae.StatusCode != http.StatusBadRequest || ae.Code != tc.code || ae.Field != tc.field {
				t.Errorf("status %d, code %q, field %q; want 400, %q, %q", ae.StatusCode, ae.Code, ae.Field, tc.code, tc.field)
			}
			if !errors.Is(err, client.ErrInvalid) {
				t.Errorf("errors.Is(%v, ErrInvalid) is false", err)
			}
			want := client.ErrInvalidRequest
			if tc.code == "invalid-token" {
				want = client.ErrInvalidToken
			}
			if !errors.Is(err, want) {
				t.Errorf("errors.Is(%v, %v) is false", err, want)
			}
			var in *client.InputError
			if !errors.As(err, &in) || in.Field != tc.field {
				t.Errorf("%v does not unwrap to an *InputError of %q", err, tc.field)
			}
		})
	}
	if n := sent.Load(); n != 0 {
		t.Errorf("%d requests reached the server, want 0", n)
	}
}
