package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/issuer"
	"github.com/fenceview/fenceview/internal/sqlite"
	"github.com/fenceview/fenceview/internal/wire"
)

// newKeyedService is a real service (named iss) over a fresh SQLite file,
// with a keyring whose admin token is "admin-token".
func newKeyedService(tb testing.TB, iss string) (*issuer.Service, *sqlite.DB, *auth.Keyring) {
	tb.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(tb.TempDir(), "f.db"))
	if err != nil {
		tb.Fatal(err)
	}
	svc := issuer.New(db, nil, 0, issuer.Config{Issuer: iss})
	tb.Cleanup(func() { svc.Close(); db.Close() })
	keys, err := auth.NewKeyring(ctx, db, "admin-token", nil)
	if err != nil {
		tb.Fatal(err)
	}
	return svc, db, keys
}

// withKeyring turns auth on for s with a new keyring in store whose admin
// token is admin.
func withKeyring(tb testing.TB, s *Server, store auth.Store, admin string) *auth.Keyring {
	tb.Helper()
	keys, err := auth.NewKeyring(context.Background(), store, admin, nil)
	if err != nil {
		tb.Fatal(err)
	}
	s.Auth = keys
	return keys
}

// newKey is a new key named name in keys, of role, for every resource, and
// its secret.
func newKey(tb testing.TB, keys *auth.Keyring, name string, role auth.Role) (auth.Key, string) {
	tb.Helper()
	key, secret, err := keys.Create(context.Background(), name, role, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return key, secret
}

// scopedKey is the secret of a new key named name in keys, of role,
// limited to the resources under "a/".
func scopedKey(tb testing.TB, keys *auth.Keyring, name string, role auth.Role) string {
	tb.Helper()
	_, secret, err := keys.Create(context.Background(), name, role, []string{"a/"})
	if err != nil {
		tb.Fatal(err)
	}
	return secret
}

// newTestAPI is the API over a real service and SQLite file.
func newTestAPI(tb testing.TB) *Server {
	tb.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(tb.TempDir(), "f.db"))
	if err != nil {
		tb.Fatal(err)
	}
	// No sweeps: an expiry the sweeper records while a fuzzed request runs
	// would read as that request's event (the fuzzer found this race).
	svc, err := issuer.Open(ctx, db, issuer.Config{Issuer: "fuzz", SweepInterval: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { svc.Close(); db.Close() })
	s := New(svc, db, nil)
	s.AdminToken = "admin"
	// Some state for bad input to disturb: a held lock, a mark, a rejection.
	if _, err := svc.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: "owner", Lease: 3600e9, Wait: 0}); err != nil {
		tb.Fatal(err)
	}
	if _, err := svc.Fence(ctx, fenceview.Fence{ResourceID: "r", Token: tokenOf(1)}); err != nil {
		tb.Fatal(err)
	}
	return s
}

var fuzzRoutes = []struct{ method, path string }{
	{"POST", "/v1/locks/%s/acquire"},
	{"POST", "/v1/locks/%s/renew"},
	{"POST", "/v1/locks/%s/release"},
	{"POST", "/v1/locks/%s/expire"},
	{"POST", "/v1/locks/%s/reset"},
	{"POST", "/v1/fence/%s"},
	{"POST", "/v1/decisions"},
	{"GET", "/v1/locks/%s"},
	{"GET", "/v1/resources/%s"},
}

// Every request body, on every route: nothing panics, nothing is a 5xx, an
// error is JSON with the code of its status, and a 4xx other than a
// refusal (409) records nothing (an unknown field included).
func FuzzRequestBodies(f *testing.F) {
	for i := range fuzzRoutes {
		for _, body := range []string{``, `{}`, `{"holder":"owner"}`, `{"holder":"x","leaseMs":5,"waitMs":0}`,
			`{"token":1}`, `{"token":2,"issuer":"fuzz","scope":"resource:r"}`, `{"floor":7}`,
			`{"decisions":[{"resourceId":"r","token":3,"accepted":true,"source":"p"}]}`, `{"holder":1e400}`, `[`, `null`,
			`{"holder":"x","lease":5}`, `{"Holder":"x"}`, `{"token":1,"tokn":2}`} {
			f.Add(uint8(i), "r", body, "")
		}
	}
	f.Add(uint8(5), "r", "", "1")
	f.Add(uint8(5), "a/b", `{"token":1}`, "2")
	s := newTestAPI(f)
	f.Fuzz(func(t *testing.T, route uint8, resource, body, token string) {
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		path := rt.path
		if bytes.Contains([]byte(path), []byte("%s")) {
			path = fmtPath(path, url.PathEscape(resource))
		}
		req := httptest.NewRequest(rt.method, "http://fenceview"+path, bytes.NewReader([]byte(body)))
		if token != "" {
			req.Header.Set("X-Fencing-Token", token)
		}
		req.Header.Set("Authorization", "Bearer admin")
		before := s.Service.Metrics().LastSeq
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s %q: %d %s", rt.method, path, body, rec.Code, rec.Body)
		}
		if rec.Code >= 400 {
			var e map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e["error"] == nil {
				t.Fatalf("%s %s: %d without a JSON error: %q", rt.method, path, rec.Code, rec.Body)
			}
			if code, _ := e["code"].(string); code == "" || statusOf(code) != rec.Code {
				t.Fatalf("%s %s: %d with code %v", rt.method, path, rec.Code, e["code"])
			}
			if rec.Code != http.StatusConflict && s.Service.Metrics().LastSeq != before {
				t.Fatalf("%s %s %q: %d but an event was recorded", rt.method, path, body, rec.Code)
			}
		}
	})
}

func fmtPath(pattern, resource string) string {
	return string(bytes.Replace([]byte(pattern), []byte("%s"), []byte(resource), 1))
}

// A JSON token is an integer in range or an error, and agrees with
// encoding/json on every integer it accepts.
func FuzzJSONInt(f *testing.F) {
	for _, s := range []string{"1", "0", "-1", "1.0", "1e3", `"1"`, "9223372036854775807", "9223372036854775808", "-", "null", "01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var n wire.Int
		if err := json.Unmarshal([]byte(s), &n); err != nil {
			return
		}
		if !n.Set {
			// null, with any JSON whitespace around it, is the one
			// token that leaves a field unset.
			if string(bytes.Trim([]byte(s), " \t\r\n")) != "null" {
				t.Fatalf("%q: accepted without a value", s)
			}
			return
		}
		var ref int64
		if err := json.Unmarshal([]byte(s), &ref); err != nil || ref != n.Value {
			t.Fatalf("%q: jsonInt %d, encoding/json %d (%v)", s, n.Value, ref, err)
		}
	})
}

func tokenOf(n int64) guard.Token { return guard.Token{Token: n} }
