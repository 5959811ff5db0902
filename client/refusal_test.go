package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview/client"
)

// refuser is a server that answers every call with one refusal, over the
// JSON API and over the RPC stream (each request line of a message gets
// an answer line with status and body, as the real server's).
func refuser(t *testing.T, status int, header http.Header, body string) string {
	up := websocket.Upgrader{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/rpc" {
			conn, err := up.Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer conn.Close()
			for {
				_, msg, err := conn.ReadMessage()
				if err != nil {
					return
				}
				var out []string
				for _, line := range strings.Split(string(msg), "\n") {
					var req struct {
						ID uint64 `json:"id"`
					}
					if json.Unmarshal([]byte(line), &req) != nil {
						t.Errorf("request line %q", line)
						return
					}
					out = append(out, fmt.Sprintf(`{"id":%d,"status":%d,"body":%s}`, req.ID, status, body))
				}
				if conn.WriteMessage(websocket.TextMessage, []byte(strings.Join(out, "\n"))) != nil {
					return
				}
			}
		}
		for k, v := range header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

var at = time.Date(2026, 9, 24, 6, 14, 52, 0, time.UTC)

// sentinels are every code's sentinel, to check that an error matches
// its own and no other.
var sentinels = map[string]error{
	"invalid-request": client.ErrInvalidRequest, "unknown-field": client.ErrUnknownField, "invalid-token": client.ErrInvalidToken,
	"too-large": client.ErrTooLarge, "method-not-allowed": client.ErrMethodNotAllowed, "unauthenticated": client.ErrUnauthenticated,
	"forbidden": client.ErrForbidden, "not-found": client.ErrNotFound, "lock-held": client.ErrLockHeld, "lock-delay": client.ErrLockDelay,
	"lease-expired": client.ErrLeaseExpired, "not-owner": client.ErrNotOwner, "not-held": client.ErrNotHeld,
	"no-permit": client.ErrNoPermit, "permits-mismatch": client.ErrPermitsMismatch, "not-leader": client.ErrNotLeader,
	"stale-token": client.ErrStaleToken, "superseded": client.ErrSuperseded, "bad-signature": client.ErrBadSignature,
	"unissued-token": client.ErrUnissuedToken, "foreign-issuer": client.ErrForeignIssuer, "scope-mismatch": client.ErrScopeMismatch,
	"exhausted": client.ErrExhausted, "conflict": client.ErrConflict, "overloaded": client.ErrOverloaded, "limit": client.ErrLimit, "unavailable": client.ErrUnavailable, "internal": client.ErrInternal,
}

// refusalCase is one error answer and what the client must make of it.
type refusalCase struct {
	status int
	body   string
	call   string // "lock" (TryLock), "unlock", "fence", "semaphore" (TryAcquire of 2 permits)
	code   string // the APIError's Code, whose sentinel must match alone
	family error  // the family sentinel that must match too, if any
	check  func(error) bool
}

// checkRefusal makes tc's call against a server answering tc's refusal,
// over JSON and over RPC, and checks the error.
func checkRefusal(t *testing.T, tc refusalCase) {
	t.Helper()
	url := refuser(t, tc.status, http.Header{"X-Fencing-Required": {"9"}}, tc.body)
	for _, rpc := range []bool{false, true} {
		c, err := client.New(client.Config{URL: url, DisableRPC: !rpc, Holder: "me"})
		if err != nil {
			t.Fatal(err)
		}
		waits := client.RecordWaits(c)
		ctx := context.Background()
		switch tc.call {
		case "lock":
			_, err = c.Mutex("r", "a").TryLock(ctx, 0, 0)
		case "unlock":
			err = c.Mutex("r", "a").Unlock(ctx)
		case "fence":
			_, err = c.Fence(ctx, "r", 5)
		case "semaphore":
			_, err = c.Semaphore("jobs", 2).TryAcquire(ctx, 0)
		}
		c.Close()
		var ae *client.APIError
		if !errors.As(err, &ae) || ae.StatusCode != tc.status || ae.Code != tc.code {
			t.Errorf("rpc %v: %s: got %T %v", rpc, tc.body, err, err)
			continue
		}
		for code, s := range sentinels {
			if errors.Is(err, s) != (code == tc.code) {
				t.Errorf("rpc %v: %s: errors.Is(err, %v) = %v", rpc, tc.body, s, !(code == tc.code))
			}
		}
		if tc.family != nil && !errors.Is(err, tc.family) {
			t.Errorf("rpc %v: %s: not %v", rpc, tc.body, tc.family)
		}
		if tc.check != nil && !tc.check(err) {
			t.Errorf("rpc %v: %s: %#v", rpc, tc.body, ae)
		}
		if tc.code == "overloaded" && len(waits()) == 0 {
			t.Errorf("rpc %v: an overloaded call was not sent again", rpc)
		}
	}
}

// Every refusal code maps to its own sentinel (and its family's), with
// its extra fields, from a JSON answer and from an RPC answer alike. The
// messages are made up: only the code decides.
func TestRefusalCodes(t *testing.T) {
	for _, tc := range []refusalCase{
		{400, `{"error":"x","code":"invalid-request","field":"waitMs"}`, "lock", "invalid-request", client.ErrInvalid,
			func(err error) bool { var e *client.APIError; return errors.As(err, &e) && e.Field == "waitMs" }},
		{400, `{"error":"x","code":"unknown-field","field":"lease"}`, "lock", "unknown-field", client.ErrInvalid,
			func(err error) bool { var e *client.APIError; return errors.As(err, &e) && e.Field == "lease" }},
		{400, `{"error":"x","code":"invalid-token"}`, "fence", "invalid-token", client.ErrInvalid, nil},
		{413, `{"error":"x","code":"too-large"}`, "lock", "too-large", client.ErrInvalid, nil},
		{405, `{"error":"x","code":"method-not-allowed"}`, "lock", "method-not-allowed", client.ErrInvalid, nil},
		{401, `{"error":"x","code":"unauthenticated"}`, "lock", "unauthenticated", client.ErrUnauthorized, nil},
		{403, `{"error":"x","code":"forbidden"}`, "lock", "forbidden", client.ErrUnauthorized, nil},
		{404, `{"error":"x","code":"not-found"}`, "lock", "not-found", nil, nil},
		{409, `{"error":"not lock owner","code":"lock-held","holder":"b","expiresAt":"2026-09-24T06:14:52.000Z"}`, "lock", "lock-held", nil,
			func(err error) bool {
				var e *client.HeldError
				return errors.As(err, &e) && e.Holder == "b" && e.ExpiresAt.Equal(at) && e.Resource == "r"
			}},
		{409, `{"error":"x","code":"lock-delay","availableAt":"2026-09-24T06:14:52.000Z"}`, "lock", "lock-delay", nil,
			func(err error) bool {
				var e *client.LockDelayError
				return errors.As(err, &e) && e.AvailableAt.Equal(at) && e.Resource == "r"
			}},
		{409, `{"error":"x","code":"lease-expired","expiredAt":"2026-09-24T06:14:52.000Z"}`, "unlock", "lease-expired", nil,
			func(err error) bool { var e *client.APIError; return errors.As(err, &e) && e.ExpiredAt.Equal(at) }},
		{409, `{"error":"lock held","code":"not-owner"}`, "unlock", "not-owner", nil, nil},
		{409, `{"error":"x","code":"not-held"}`, "unlock", "not-held", nil, nil},
		{409, `{"error":"x","code":"no-permit","permits":2}`, "semaphore", "no-permit", nil,
			func(err error) bool {
				var e *client.NoPermitError
				return errors.As(err, &e) && e.Permits == 2 && e.Semaphore == "jobs"
			}},
		{409, `{"error":"x","code":"permits-mismatch","permits":4}`, "semaphore", "permits-mismatch", nil,
			func(err error) bool {
				var e *client.PermitsMismatchError
				return errors.As(err, &e) && e.Permits == 4 && e.Asked == 2
			}},
		{409, `{"error":"x","code":"not-leader"}`, "unlock", "not-leader", nil, nil},
		{429, `{"error":"x","code":"overloaded","retryAfterMs":250}`, "lock", "overloaded", nil,
			func(err error) bool {
				var e *client.APIError
				return errors.As(err, &e) && e.RetryAfter == 250*time.Millisecond && e.Temporary()
			}},
		{409, `{"error":"x","code":"exhausted"}`, "lock", "exhausted", nil, nil},
		{409, `{"error":"x","code":"conflict"}`, "lock", "conflict", nil, nil},
		{429, `{"error":"x","code":"limit"}`, "lock", "limit", nil, nil},
		{503, `{"error":"x","code":"unavailable"}`, "lock", "unavailable", nil, nil},
		{500, `{"error":"x","code":"internal"}`, "lock", "internal", nil, nil},
	} {
		checkRefusal(t, tc)
	}
	for _, reason := range []string{"stale-token", "superseded", "bad-signature", "unissued-token", "foreign-issuer", "scope-mismatch"} {
		checkRefusal(t, refusalCase{409, `{"accepted":false,"error":"x","code":"` + reason + `","reason":"` + reason + `","required":9}`,
			"fence", reason, client.ErrTokenRefused, func(err error) bool {
				var e *client.RefusalError
				return errors.As(err, &e) && e.Reason == reason && e.Required == 9 && e.Presented == 5 && e.Resource == "r"
			}})
	}
}

// A server that sends no code: the status decides (and for a 409 the
// call and the answer's fields), never the message, made misleading here.
func TestRefusalsWithoutCode(t *testing.T) {
	for _, tc := range []refusalCase{
		{400, `{"error":"lock held"}`, "lock", "invalid-request", client.ErrInvalid, nil},
		{401, `{"error":"lock held"}`, "lock", "unauthenticated", client.ErrUnauthorized, nil},
		{403, `{"error":"lock held"}`, "lock", "forbidden", client.ErrUnauthorized, nil},
		{404, `{"error":"lock held"}`, "lock", "not-found", nil, nil},
		{409, `{"error":"not lock owner","holder":"b"}`, "lock", "lock-held", nil, nil},
		{409, `{"error":"lock held","availableAt":"2026-09-24T06:14:52.000Z"}`, "lock", "lock-delay", nil, nil},
		{409, `{"error":"lock held"}`, "unlock", "not-owner", nil, nil},
		{409, `{"error":"lock held","permits":2}`, "semaphore", "no-permit", nil, nil},
		{409, `{"error":"lock held","permits":3}`, "semaphore", "permits-mismatch", nil, nil},
		{409, `{"accepted":false,"error":"lock held","reason":"unissued-token"}`, "fence", "unissued-token", client.ErrTokenRefused, nil},
		{429, `{"error":"lock held"}`, "lock", "overloaded", nil, nil},
		{503, `{"error":"lock held"}`, "lock", "unavailable", nil, nil},
		{500, `{"error":"lock held"}`, "lock", "internal", nil, nil},
	} {
		checkRefusal(t, tc)
	}
}

// A shed call that the caller's deadline cannot wait for comes back at
// once, overloaded, and is not sent again.
func TestOverloadedWithinDeadline(t *testing.T) {
	var calls atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write([]byte(`{"error":"x","code":"overloaded"}`))
	}))
	defer ts.Close()
	c, _ := client.New(client.Config{URL: ts.URL})
	defer c.Close()
	waits := client.RecordWaits(c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.Mutex("r", "a").TryLock(ctx, 0, 0)
	var ae *client.APIError
	if !errors.Is(err, client.ErrOverloaded) || !errors.As(err, &ae) || ae.RetryAfter != 30*time.Second {
		t.Fatalf("TryLock = %v", err)
	}
	if calls.Load() != 1 || len(waits()) != 0 {
		t.Fatalf("%d calls, waits %v: want 1 call, no wait", calls.Load(), waits())
	}
}

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
