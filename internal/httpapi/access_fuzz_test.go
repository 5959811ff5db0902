package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/issuer"
	"github.com/fenceview/fenceview/internal/sqlite"
	"github.com/fenceview/fenceview/internal/telemetry"
)

// The credential and routing layer under any request: method, path,
// Authorization, Origin, Sec-Fetch-Site and Host all chosen by the fuzzer.
// Nothing panics or answers 5xx; only an exact credential gets past 401;
// a viewer, an anonymous caller or a cross-site page changes nothing; a
// key limited to "a/" succeeds only on its own resources.
func FuzzAccess(f *testing.F) {
	ctx := context.Background()
	svc, db, keys := newKeyedService(f, "fuzz")
	viewer, cli := scopedKey(f, keys, "v", auth.Viewer), scopedKey(f, keys, "c", auth.Client)
	s := New(svc, db, nil)
	s.Auth, s.Sessions = keys, auth.NewSessions(keys, 10, 3600e9, nil)
	if _, err := svc.Acquire(fenceview.WithOwnerKey(ctx, "admin"), fenceview.AcquireRequest{ResourceID: "b/held", Holder: "owner", Lease: 3600e9, Wait: 0}); err != nil {
		f.Fatal(err)
	}
	creds := []string{"", "Bearer " + viewer, "Bearer " + cli, "Bearer admin-token", "bearer " + cli, "Bearer " + cli[:len(cli)-1] + "x", "Basic admin-token"}
	methods := []string{"GET", "POST", "DELETE", "PUT", "HEAD", "OPTIONS"}
	for i, p := range []string{"/v1/locks/a%2Fx/acquire", "/v1/locks/b%2Fheld/release", "/v1/fence/b%2Fy", "/v1/decisions", "/v1/auth/keys",
		"/v1/locks/a%2Fx/expire", "/v1/resources", "/v1/rejections?resource=b%2Fy", "/healthz", "/login", "/v1/events", "/v1/rpc"} {
		for j := range creds {
			f.Add(uint8(i%len(methods)), p, uint8(j), "", "", "", `{"holder":"owner","token":5,"name":"n","role":"admin"}`)
		}
	}
	f.Add(uint8(1), "/v1/locks/a%2Fx/acquire", uint8(2), "http://evil.example", "cross-site", "evil.example", `{"holder":"h"}`)
	f.Fuzz(func(t *testing.T, method uint8, path string, cred uint8, origin, site, host, body string) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		u, err := url.Parse("http://fenceview" + path)
		if err != nil || u.Host != "fenceview" {
			return
		}
		m := methods[int(method)%len(methods)]
		req := httptest.NewRequest(m, "http://fenceview/", strings.NewReader(body))
		req.URL = u
		req.RequestURI = u.RequestURI()
		authz := creds[int(cred)%len(creds)]
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if site != "" {
			req.Header.Set("Sec-Fetch-Site", site)
		}
		if host != "" {
			req.Host = host
		}
		before := svc.LastSeq()
		nkeys := len(keys.List())
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s: %d %s", m, path, rec.Code, rec.Body)
		}
		if rec.Code >= 400 && rec.Header().Get("Content-Type") == "application/json" {
			var e map[string]any
			if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e["error"] == nil {
				t.Fatalf("%d without a JSON error: %q", rec.Code, rec.Body)
			}
		}
		changed := svc.LastSeq() != before || len(keys.List()) != nkeys
		valid := authz == "Bearer "+viewer || authz == "Bearer "+cli || authz == "Bearer admin-token" || authz == "bearer "+cli
		if rec.Code < 300 && !valid {
			_, pattern := s.mux.Handler(req)
			if _, public := actionOf(pattern); !public {
				t.Fatalf("%s %s with %q: %d without a valid credential", m, path, authz, rec.Code)
			}
		}
		if changed {
			crossSite := strings.EqualFold(site, "cross-site") || (origin != "" && !sameOrigin(origin, req.Host))
			if !valid || authz == "Bearer "+viewer || crossSite {
				t.Fatalf("%s %s with %q origin %q site %q: state changed (%d)", m, path, authz, origin, site, rec.Code)
			}
			if authz != "Bearer admin-token" && bytes.Contains([]byte(u.Path), []byte("/b")) {
				t.Fatalf("%s %s: a key for a/ changed %s", m, path, u.Path)
			}
		}
		if bytes.Contains(rec.Body.Bytes(), []byte(cli)) || bytes.Contains(rec.Body.Bytes(), []byte(viewer)) {
			t.Fatalf("%s %s: a secret in the answer", m, path)
		}
	})
}

// The cost of admit alone (route match, hash of the secret, key lookup,
// role and Origin checks) on an acquire, auth off and on: compare with the
// tens of microseconds a durable grant takes.
//
//	go test ./httpapi -run '^$' -bench Admit
func BenchmarkAdmit(b *testing.B) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "f.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	svc := issuer.New(db, nil, 0, issuer.Config{Issuer: "bench"})
	defer svc.Close()
	for _, on := range []bool{false, true} {
		name := map[bool]string{false: "off", true: "on"}[on]
		b.Run(name, func(b *testing.B) {
			s := New(svc, db, nil)
			req := httptest.NewRequest("POST", "http://127.0.0.1:8080/v1/locks/bench-1/acquire", nil)
			s.AllowedHosts = NewHostList("127.0.0.1:8080", nil)
			if on {
				keys, _ := auth.NewKeyring(ctx, db, "admin", nil)
				_, secret, err := keys.Create(ctx, "b", auth.Client, []string{"bench-"})
				if err != nil {
					b.Fatal(err)
				}
				s.Auth = keys
				req.Header.Set("Authorization", "Bearer "+secret)
			}
			rec := httptest.NewRecorder()
			_, pattern := s.mux.Handler(req)
			o := rowOf(pattern)
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := s.admit(rec, req, o); !ok {
					b.Fatal("refused")
				}
			}
		})
	}
}

// The router, the access layer and the request metrics under a method, a
// path and headers chosen together by the fuzzer, the method any token at
// all: nothing panics or answers 5xx, nothing changes without a valid
// credential, and the request histogram's labels stay in their closed sets
// (standard methods or OTHER; registered route patterns or "unmatched"),
// so no request adds a series of its own choosing.
func FuzzRouter(f *testing.F) {
	svc, db, keys := newKeyedService(f, "fuzz")
	cli := scopedKey(f, keys, "c", auth.Client)
	s := New(svc, db, nil)
	s.Auth, s.Sessions = keys, auth.NewSessions(keys, 10, 3600e9, nil)
	m := telemetry.New()
	h := telemetry.Instrument(s, m, nil)
	patterns := map[string]bool{"unmatched": true}
	methods := map[string]bool{"OTHER": true}
	for _, meth := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "CONNECT", "OPTIONS", "TRACE"} {
		methods[meth] = true
	}
	for _, p := range []string{"/v1/locks/a%2Fx/acquire", "/v1/rpc", "/v1/events", "/metrics", "/static/x", "/v1/auth/keys/1", "/nowhere"} {
		f.Add("GET", p, "Bearer "+cli, "Upgrade", "websocket", "Origin", "http://fenceview")
		f.Add("BREW", p, "", "Connection", "Upgrade", "Sec-Fetch-Site", "cross-site")
		f.Add("POST", p, "Bearer admin-token", "Content-Type", "application/json", "X-Fencing-Token", "1")
	}
	f.Fuzz(func(t *testing.T, method, path, authz, h1, v1, h2, v2 string) {
		if !validMethod(method) || len(method) > 1<<10 {
			return // net/http refuses such a request line before any handler
		}
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		u, err := url.Parse("http://fenceview" + path)
		if err != nil || u.Host != "fenceview" {
			return
		}
		req := httptest.NewRequest("GET", "http://fenceview/", strings.NewReader(`{"holder":"h","token":1}`))
		req.Method, req.URL, req.RequestURI = method, u, u.RequestURI()
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		for _, kv := range [][2]string{{h1, v1}, {h2, v2}} {
			if validMethod(kv[0]) && !strings.ContainsAny(kv[1], "\r\n\x00") { // a header name is a token too
				req.Header.Add(kv[0], kv[1])
			}
		}
		before := svc.LastSeq()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%q %s: %d %s", method, path, rec.Code, rec.Body)
		}
		valid := authz == "Bearer "+cli || authz == "Bearer admin-token"
		if svc.LastSeq() != before && !valid {
			t.Fatalf("%q %s with %q: state changed without a credential", method, path, authz)
		}
		fams, err := m.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, fam := range fams {
			if fam.GetName() != "fenceview_http_request_duration_seconds" {
				continue
			}
			for _, metric := range fam.GetMetric() {
				for _, l := range metric.GetLabel() {
					switch l.GetName() {
					case "method":
						if !methods[l.GetValue()] {
							t.Fatalf("method label %q", l.GetValue())
						}
					case "route":
						if r := l.GetValue(); !patterns[r] {
							// A route label must be one of the router's patterns.
							probe := httptest.NewRequest("GET", "http://fenceview/", nil)
							if meth, p, ok := strings.Cut(r, " "); ok {
								probe.Method, probe.URL.Path = meth, strings.NewReplacer("{resource}", "x", "{id}", "x", "{name}", "x").Replace(p)
							}
							if _, got := s.mux.Handler(probe); got != r {
								t.Fatalf("route label %q is not a pattern (a probe matched %q)", r, got)
							}
							patterns[r] = true
						}
					}
				}
			}
		}
	})
}

// validMethod reports whether m is an RFC 9110 token, as net/http requires
// of a method and a header name.
func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}
