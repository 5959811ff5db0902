package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/fenceview/fenceview/internal/api"
	"github.com/fenceview/fenceview/internal/auth"
)

// Every request the router sees carries a principal, whatever the route,
// credential or auth mode: auth off says auth.Open, a public route says
// auth.Anonymous (even when a valid credential is sent), anything else the
// credential's own. Nothing is left to a default a handler might read.
func TestNoHandlerRunsWithoutAPrincipal(t *testing.T) {
	svc, db, keys := newKeyedService(t, "t")
	viewer := scopedKey(t, keys, "v", auth.Viewer)
	paths := []string{"/static/missing.js", "/static/app.js", "/login", "/healthz", "/guard.wasm", "/v1/signing-keys",
		"/favicon.ico", "/openapi.json", "/", "/status", "/rejections", "/v1/resources", "/v1/locks/a%2Fx", "/no/such/route", "/v1/auth/keys"}
	// And every route the API documents, so a route added later is covered.
	var spec struct{ Paths map[string]any }
	if err := json.Unmarshal(api.JSON(), &spec); err != nil {
		t.Fatal(err)
	}
	param := regexp.MustCompile(`\{[^}]+\}`)
	for p := range spec.Paths {
		paths = append(paths, param.ReplaceAllString(p, "a%2Fx"))
	}
	if len(spec.Paths) < 10 {
		t.Fatalf("the OpenAPI document has %d paths", len(spec.Paths))
	}
	creds := []string{"", "Bearer " + viewer, "Bearer admin-token", "Bearer wrong"}
	for _, on := range []bool{false, true} {
		s := New(svc, db, nil)
		if on {
			s.Auth = keys
		}
		for _, p := range []string{"GET /static/", "GET /login", "GET /favicon.ico", "GET /status", "GET /rejections", "GET /{$}"} {
			s.Handle(p, http.NotFoundHandler()) // the dashboard's routes, as it registers them
		}
		for _, method := range []string{"GET", "POST", "DELETE", "BREW"} {
			for _, p := range paths {
				for _, c := range creds {
					req := httptest.NewRequest(method, "http://127.0.0.1/"+p[1:], nil)
					if c != "" {
						req.Header.Set("Authorization", c)
					}
					_, pattern := s.mux.Handler(req)
					got, ok := s.admit(httptest.NewRecorder(), req, rowOf(pattern))
					if !ok {
						continue
					}
					if got == nil {
						t.Fatalf("auth on=%v %s %s %q: admitted without a principal", on, method, p, c)
					}
					_, public := actionOf(pattern)
					switch {
					case !on && got != auth.Open:
						t.Fatalf("auth off %s %s: principal %q, want the open one", method, p, got.Name)
					case on && public && got != auth.Anonymous:
						t.Fatalf("%s %s %q (public): principal %q, want anonymous", method, p, c, got.Name)
					case on && !public && (got == auth.Anonymous || got == auth.Open):
						t.Fatalf("%s %s %q: admitted as %q", method, p, c, got.Name)
					}
				}
			}
		}
	}
}

// Anonymous may do nothing and sees nothing; its empty prefix list is not
// "every resource".
func TestAnonymousSeesNothing(t *testing.T) {
	a := auth.FromContext(context.Background())
	if a != auth.Anonymous {
		t.Fatalf("principal of a bare context: %q", a.Name)
	}
	for _, act := range []auth.Action{auth.Read, auth.Lock, auth.Fence, auth.Report, auth.Manage} {
		if a.Allows(act) {
			t.Fatalf("anonymous allows action %d", act)
		}
	}
	if a.Sees("") || a.Sees("x") || a.Unrestricted() || !a.SeesNothing() {
		t.Fatal("anonymous sees a resource")
	}
	if !auth.Open.Unrestricted() || !auth.Open.Allows(auth.Manage) || auth.Open.SeesNothing() {
		t.Fatal("the open principal (auth off) is not unrestricted")
	}
}
