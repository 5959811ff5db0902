package server_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/clock"
	"github.com/fenceview/fenceview/internal/server"
	"github.com/fenceview/fenceview/internal/servertest"
)

const admin = "admin-s3cret"

type answer struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    string
}

// call sends a request; header is name, value pairs. A credential of ""
// sends no Authorization header.
func call(t *testing.T, hc *http.Client, method, u, cred string, body any, header ...string) answer {
	t.Helper()
	if cred != "" {
		header = append([]string{"Authorization", "Bearer " + cred}, header...)
	}
	a := servertest.Do(t, hc, servertest.NewRequest(t, method, u, body, header...))
	return answer{Status: a.Status, Header: a.Header, Body: a.Body, Raw: string(a.Raw)}
}

func (a answer) wantError(t *testing.T, status int) {
	t.Helper()
	if a.Status != status {
		t.Fatalf("status %d, want %d: %s", a.Status, status, a.Raw)
	}
	if msg, _ := a.Body["error"].(string); msg == "" {
		t.Fatalf("no JSON error: %s", a.Raw)
	}
}

// newKey makes a key with the admin token and returns its id and secret.
func newKey(t *testing.T, s *servertest.Server, name, role string, prefixes ...string) (string, string) {
	t.Helper()
	body := map[string]any{"name": name, "role": role}
	if len(prefixes) > 0 {
		body["resources"] = prefixes
	}
	a := call(t, nil, "POST", s.URL()+"/v1/auth/keys", admin, body)
	if a.Status != 201 {
		t.Fatalf("create key: %d %s", a.Status, a.Raw)
	}
	return a.Body["id"].(string), a.Body["secret"].(string)
}

func acquireBody(holder string) map[string]any {
	return map[string]any{"holder": holder, "leaseMs": 60000}
}

// seq is the last event number: it moves with every change.
func seq(s *servertest.Server) int64 { return s.Service.LastSeq() }

// Today's server let anyone who reached the port release anyone's lock and
// report any decision. With an admin token, every route but the public ones
// needs a credential, and each role may do its own part only.
func TestRolesAndStatuses(t *testing.T) {
	fc := clock.NewFake(clock.TestDate)
	s := servertest.Start(t, server.Config{AdminToken: admin, Clock: fc})
	_, viewer := newKey(t, s, "dash", "viewer")
	_, cli := newKey(t, s, "worker", "client")
	_, grd := newKey(t, s, "db-guard", "guard")
	if a := call(t, nil, "POST", s.URL()+"/v1/locks/r/acquire", cli, acquireBody("h")); a.Status != 200 {
		t.Fatalf("client acquire: %d %s", a.Status, a.Raw)
	}
	report := map[string]any{"decisions": []any{map[string]any{"resourceId": "r", "token": 1, "accepted": true, "source": "p"}}}
	cases := []struct {
		method, path string
		body         any
		allowed      map[string]int // credential -> status; others get 403
	}{
		{"GET", "/v1/locks/r", nil, map[string]int{viewer: 200, cli: 200, grd: 200, admin: 200}},
		{"GET", "/v1/resources", nil, map[string]int{viewer: 200, cli: 200, grd: 200, admin: 200}},
		{"GET", "/v1/rejections", nil, map[string]int{viewer: 200, cli: 200, grd: 200, admin: 200}},
		{"GET", "/metrics", nil, map[string]int{viewer: 200, cli: 200, grd: 200, admin: 200}},
		{"POST", "/v1/locks/other/acquire", acquireBody("x"), map[string]int{cli: 200, admin: 409}},
		{"POST", "/v1/locks/r/renew", map[string]any{"holder": "nobody"}, map[string]int{cli: 409, admin: 409}},
		{"POST", "/v1/locks/r/release", map[string]any{"holder": "nobody"}, map[string]int{cli: 409, admin: 409}},
		{"POST", "/v1/fence/f", map[string]any{"token": 5}, map[string]int{cli: 200, grd: 200, admin: 200}},
		{"POST", "/v1/decisions", report, map[string]int{grd: 200, admin: 200}},
		{"GET", "/v1/auth/keys", nil, map[string]int{admin: 200}},
		{"POST", "/v1/locks/zz/expire", nil, map[string]int{admin: 200}},
	}
	for _, c := range cases {
		for _, cred := range []string{viewer, cli, grd, admin} {
			before := seq(s)
			a := call(t, nil, c.method, s.URL()+c.path, cred, c.body)
			want, ok := c.allowed[cred]
			if !ok {
				want = 403
			}
			if a.Status != want {
				t.Fatalf("%s %s as %.8s: %d, want %d: %s", c.method, c.path, cred, a.Status, want, a.Raw)
			}
			if want == 403 && seq(s) != before {
				t.Fatalf("%s %s as %.8s: refused but recorded an event", c.method, c.path, cred)
			}
		}
		// Missing, unknown, malformed: 401 with a JSON error, and nothing changes.
		for _, h := range []string{"", "Bearer fv_0123456789abcdef_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "Bearer " + admin + "x", "Basic " + admin, admin} {
			before := seq(s)
			a := call(t, nil, c.method, s.URL()+c.path, "", c.body, "Authorization", h)
			a.wantError(t, 401)
			if seq(s) != before {
				t.Fatalf("%s %s with %q: 401 but recorded an event", c.method, c.path, h)
			}
			if a.Header.Get("WWW-Authenticate") == "" {
				t.Fatalf("401 without WWW-Authenticate")
			}
		}
		// This address's budget of bad credentials refills (it is
		// spent past 20: TestBadCredentialsAreThrottled).
		fc.Advance(5 * auth.FailureInterval)
	}
	// The scheme word in any case (RFC 9110).
	for _, scheme := range []string{"bearer", "BEARER", "BeArEr"} {
		if a := call(t, nil, "GET", s.URL()+"/v1/locks/r", "", nil, "Authorization", scheme+" "+viewer); a.Status != 200 {
			t.Fatalf("%s scheme: %d %s", scheme, a.Status, a.Raw)
		}
	}
	// Public routes need nothing.
	for _, p := range []string{"/healthz", "/guard.wasm", "/login"} {
		if a := call(t, nil, "GET", s.URL()+p, "", nil); a.Status != 200 {
			t.Fatalf("public %s: %d", p, a.Status)
		}
	}
	// A browser opening the dashboard without a session goes to the login.
	a := call(t, noRedirect, "GET", s.URL()+"/", "", nil, "Accept", "text/html")
	if a.Status != 303 || !strings.HasPrefix(a.Header.Get("Location"), "/login") {
		t.Fatalf("dashboard without a session: %d %s", a.Status, a.Header.Get("Location"))
	}
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// Secrets are shown once, kept only as hashes, and never listed.
func TestKeySecretsAreShownOnceAndStoredHashed(t *testing.T) {
	s := servertest.Start(t, server.Config{AdminToken: admin})
	id, secret := newKey(t, s, "worker", "client", "team-a/")
	if !strings.HasPrefix(secret, "fv_"+id+"_") || len(secret) < 40 {
		t.Fatalf("secret %q for id %s", secret, id)
	}
	a := call(t, nil, "GET", s.URL()+"/v1/auth/keys", admin, nil)
	if strings.Contains(a.Raw, secret) || strings.Contains(a.Raw, "secret") || strings.Contains(a.Raw, secret[len(secret)-20:]) {
		t.Fatalf("key list shows the secret: %s", a.Raw)
	}
	keys := a.Body["keys"].([]any)
	k := keys[0].(map[string]any)
	if len(keys) != 1 || k["id"] != id || k["name"] != "worker" || k["role"] != "client" || k["resources"].([]any)[0] != "team-a/" || k["createdAt"] == nil {
		t.Fatalf("key list: %s", a.Raw)
	}
	s.Close()
	for _, f := range []string{s.DBPath, s.DBPath + "-wal"} {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte(secret)) || bytes.Contains(b, []byte(secret[len(secret)-43:])) {
			t.Fatalf("%s holds the secret in clear", f)
		}
	}
	// Bad key requests: 400, nothing made.
	s2 := servertest.Start(t, server.Config{AdminToken: admin})
	for _, body := range []string{`{}`, `{"name":"x","role":"root"}`, `{"name":"","role":"viewer"}`, `{"name":"x","role":"viewer","resources":[""]}`,
		`{"name":"a\u0000b","role":"viewer"}`, `{"name":"x","role":"viewer","resources":"team"}`} {
		call(t, nil, "POST", s2.URL()+"/v1/auth/keys", admin, body).wantError(t, 400)
	}
	if a := call(t, nil, "GET", s2.URL()+"/v1/auth/keys", admin, nil); len(a.Body["keys"].([]any)) != 0 {
		t.Fatalf("bad requests made keys: %s", a.Raw)
	}
	call(t, nil, "DELETE", s2.URL()+"/v1/auth/keys/nope", admin, nil).wantError(t, 404)
}

func dial(t *testing.T, u, cred string, header ...string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	h := http.Header{}
	if cred != "" {
		h.Set("Authorization", "Bearer "+cred)
	}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	return websocket.DefaultDialer.Dial(u, h)
}

// openStream dials the stream at path with cred, failing the test when it
// cannot; the connection closes as the test ends.
func openStream(t *testing.T, s *servertest.Server, path, cred string) *websocket.Conn {
	t.Helper()
	c, _, err := dial(t, wsURL(s, path), cred)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func wsURL(s *servertest.Server, path string) string {
	return "ws" + strings.TrimPrefix(s.URL(), "http") + path
}

// Revoking a key works at once: its requests get 401 and its open event
// stream and RPC connection are closed.
func TestRevocationIsImmediateOnOpenStreams(t *testing.T) {
	s := servertest.Start(t, server.Config{AdminToken: admin})
	id, cli := newKey(t, s, "worker", "client")
	events := openStream(t, s, "/v1/events", cli)
	rpc := openStream(t, s, "/v1/rpc", cli)
	rpc.WriteMessage(websocket.TextMessage, []byte(`{"id":1,"op":"acquire","resource":"r","holder":"h"}`))
	rpc.SetReadDeadline(time.Now().Add(10 * time.Second)) // hang guard
	if _, m, err := rpc.ReadMessage(); err != nil || !strings.Contains(string(m), `"status":200`) {
		t.Fatalf("rpc acquire: %s %v", m, err)
	}
	if a := call(t, nil, "DELETE", s.URL()+"/v1/auth/keys/"+id, admin, nil); a.Status != 200 {
		t.Fatalf("revoke: %d %s", a.Status, a.Raw)
	}
	call(t, nil, "GET", s.URL()+"/v1/locks/r", cli, nil).wantError(t, 401)
	for name, c := range map[string]*websocket.Conn{"events": events, "rpc": rpc} {
		c.SetReadDeadline(time.Now().Add(10 * time.Second)) // hang guard
		for {
			_, _, err := c.ReadMessage()
			if err == nil {
				continue // events committed before the revocation
			}
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation {
				t.Fatalf("%s: ended with %v, want close 1008", name, err)
			}
			break
		}
	}
	if _, res, err := dial(t, wsURL(s, "/v1/events"), cli); err == nil || res.StatusCode != 401 {
		t.Fatalf("revoked key opened a stream: %v", err)
	}
}

// A key limited to prefixes acts on, reads and sees only those resources.
func TestResourcePrefixes(t *testing.T) {
	s := servertest.Start(t, server.Config{AdminToken: admin})
	_, a := newKey(t, s, "team-a", "client", "team-a/")
	_, g := newKey(t, s, "guard-a", "guard", "team-a/")
	// History on both sides, made by the admin.
	for _, r := range []string{"team-a/x", "team-b/y"} {
		call(t, nil, "POST", s.URL()+"/v1/locks/"+url.PathEscape(r)+"/acquire", admin, acquireBody("h"))
		call(t, nil, "POST", s.URL()+"/v1/fence/"+url.PathEscape(r), admin, map[string]any{"token": 3})
		call(t, nil, "POST", s.URL()+"/v1/fence/"+url.PathEscape(r), admin, map[string]any{"token": 1})
	}
	before := seq(s)
	for _, c := range []struct{ method, path, cred string }{
		{"POST", "/v1/locks/team-b%2Fy/acquire", a},
		{"POST", "/v1/locks/team-b%2Fy/release", a},
		{"POST", "/v1/fence/team-b%2Fy", a},
		{"GET", "/v1/locks/team-b%2Fy", a},
		{"GET", "/v1/resources/team-b%2Fy", a},
		{"GET", "/v1/rejections?resource=team-b%2Fy", a},
		{"POST", "/v1/locks/team-%2Fz/acquire", a}, // a shorter prefix is not the prefix
	} {
		call(t, nil, c.method, s.URL()+c.path, c.cred, map[string]any{"holder": "h", "token": 9}).wantError(t, 403)
	}
	rep := map[string]any{"decisions": []any{
		map[string]any{"resourceId": "team-a/x", "token": 9, "accepted": true, "source": "p"},
		map[string]any{"resourceId": "team-b/y", "token": 9, "accepted": true, "source": "p"},
	}}
	call(t, nil, "POST", s.URL()+"/v1/decisions", g, rep).wantError(t, 403)
	if seq(s) != before {
		t.Fatal("refused requests recorded events")
	}
	// Lists leave the others out.
	res := call(t, nil, "GET", s.URL()+"/v1/resources", a, nil)
	if strings.Contains(res.Raw, "team-b") || !strings.Contains(res.Raw, "team-a/x") {
		t.Fatalf("resources: %s", res.Raw)
	}
	rej := call(t, nil, "GET", s.URL()+"/v1/rejections", a, nil)
	if strings.Contains(rej.Raw, "team-b") || !strings.Contains(rej.Raw, "team-a/x") {
		t.Fatalf("rejections: %s", rej.Raw)
	}
	// The stream: the replay and live events, team-a's only.
	ws := openStream(t, s, "/v1/events?since=0", a)
	call(t, nil, "POST", s.URL()+"/v1/fence/team-b%2Fy", admin, map[string]any{"token": 1})
	call(t, nil, "POST", s.URL()+"/v1/fence/team-a%2Fx", admin, map[string]any{"token": 1})
	ws.SetReadDeadline(time.Now().Add(10 * time.Second)) // hang guard
	n := 0
	for {
		var e map[string]any
		if err := ws.ReadJSON(&e); err != nil {
			t.Fatal(err)
		}
		if e["resourceId"] != "team-a/x" {
			t.Fatalf("stream showed %v", e)
		}
		if n++; int64(e["seq"].(float64)) == seq(s) {
			break // the last event, team-a's
		}
	}
	// RPC answers refuse the other team's resources.
	rpc := openStream(t, s, "/v1/rpc", a)
	rpc.WriteMessage(websocket.TextMessage, []byte(`{"id":1,"op":"acquire","resource":"team-b/y","holder":"h"}`))
	rpc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, m, err := rpc.ReadMessage(); err != nil || !strings.Contains(string(m), `"status":403`) {
		t.Fatalf("rpc outside prefixes: %s %v", m, err)
	}
	// A viewer may not open the RPC stream at all.
	_, v := newKey(t, s, "v", "viewer")
	if _, res, err := dial(t, wsURL(s, "/v1/rpc"), v); err == nil || res.StatusCode != 403 {
		t.Fatalf("viewer rpc: %v", err)
	}
}

// With auth on, a lock belongs to (key, holder): another key cannot renew
// or release it under the same holder name, before and after a restart.
func TestLockOwnershipByKey(t *testing.T) {
	db := filepath.Join(t.TempDir(), "f.db")
	s := servertest.Start(t, server.Config{AdminToken: admin, DBPath: db})
	_, k1 := newKey(t, s, "one", "client")
	_, k2 := newKey(t, s, "two", "client")
	if a := call(t, nil, "POST", s.URL()+"/v1/locks/r/acquire", k1, acquireBody("shared-name")); a.Status != 200 {
		t.Fatalf("acquire: %d %s", a.Status, a.Raw)
	}
	check := func(s *servertest.Server) {
		t.Helper()
		before := seq(s)
		for _, op := range []string{"renew", "release"} {
			a := call(t, nil, "POST", s.URL()+"/v1/locks/r/"+op, k2, map[string]any{"holder": "shared-name"})
			a.wantError(t, 409)
			if a.Body["error"] != "not lock owner" {
				t.Fatalf("%s by another key: %s", op, a.Raw)
			}
		}
		// Nor re-entrant acquire: that would hand it a token.
		call(t, nil, "POST", s.URL()+"/v1/locks/r/acquire", k2, acquireBody("shared-name")).wantError(t, 409)
		if seq(s) != before {
			t.Fatal("refused ownership changes recorded events")
		}
	}
	check(s)
	s.Close()
	s = servertest.Start(t, server.Config{AdminToken: admin, DBPath: db})
	check(s)
	if a := call(t, nil, "POST", s.URL()+"/v1/locks/r/release", k1, map[string]any{"holder": "shared-name"}); a.Status != 200 {
		t.Fatalf("owner release: %d %s", a.Status, a.Raw)
	}
}

// Secrets never reach the log, whatever is done with them: made, used,
// refused, revoked, logged in with.
func TestSecretsStayOutOfTheLog(t *testing.T) {
	var logbuf servertest.LogBuffer
	s := servertest.Start(t, server.Config{AdminToken: admin, Logger: slog.New(slog.NewTextHandler(&logbuf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	id, secret := newKey(t, s, "w", "client")
	call(t, nil, "POST", s.URL()+"/v1/locks/r/acquire", secret, acquireBody("h"))
	call(t, nil, "GET", s.URL()+"/v1/locks/r", secret+"x", nil)
	call(t, nil, "POST", s.URL()+"/login", "", "key="+url.QueryEscape(secret), "Content-Type", "application/x-www-form-urlencoded")
	call(t, nil, "DELETE", s.URL()+"/v1/auth/keys/"+id, admin, nil)
	call(t, nil, "GET", s.URL()+"/v1/locks/r", secret, nil)
	s.Close()
	out := logbuf.String()
	if !strings.Contains(out, "fenceview ready") {
		t.Fatalf("no log captured: %q", out)
	}
	for _, sec := range []string{secret, secret[len(secret)-43:], admin} {
		if strings.Contains(out, sec) {
			t.Fatalf("a secret in the log:\n%s", out)
		}
	}
}
