package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard/httpguard"
	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/clock"
	"github.com/fenceview/fenceview/internal/issuer"
	"github.com/fenceview/fenceview/internal/sqlite"
	"github.com/fenceview/fenceview/internal/wire"
)

// codesAPI is a real server (issuer, SQLite, keyring with admin token
// "admin") on a fake clock, served on 127.0.0.1.
type codesAPI struct {
	s      *Server
	srv    *httptest.Server
	clock  *clock.Fake
	viewer string // a viewer key's secret
}

func newCodesAPI(t *testing.T, cfg issuer.Config, wrap func(fenceview.Services) fenceview.Services) *codesAPI {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "f.db"))
	if err != nil {
		t.Fatal(err)
	}
	fake := clock.NewFake(clock.TestDate)
	cfg.Issuer, cfg.Clock, cfg.SweepInterval = "codes", fake, time.Hour
	svc, err := issuer.Open(ctx, db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(); db.Close() })
	var services fenceview.Services = svc
	if wrap != nil {
		services = wrap(svc)
	}
	s := New(services, db, nil)
	_, viewer := newKey(t, withKeyring(t, s, db, "admin"), "viewer", auth.Viewer)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return &codesAPI{s: s, srv: srv, clock: fake, viewer: viewer}
}

// do sends one request as the admin (bearer "" sends none) and returns
// the answer and its JSON body.
func (a *codesAPI) do(t *testing.T, method, path, bearer, body string, header http.Header) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, a.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s %s: %d %q is not a JSON object", method, path, res.StatusCode, raw)
	}
	return res, m
}

// rpc sends one request line on a new RPC connection and returns the
// answer's status and body.
func (a *codesAPI) rpc(t *testing.T, line string) (int, map[string]any) {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(a.srv.URL, "http")+"/v1/rpc",
		http.Header{"Authorization": {"Bearer admin"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := ws.WriteMessage(websocket.TextMessage, []byte(line)); err != nil {
		t.Fatal(err)
	}
	ws.SetReadDeadline(time.Now().Add(30 * time.Second)) // hang guard
	_, msg, err := ws.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	var ans wire.Answer
	var body map[string]any
	if err := wire.DecodeAnswer(msg, &ans); err != nil || json.Unmarshal(ans.Body, &body) != nil {
		t.Fatalf("answer %q: %v", msg, err)
	}
	return ans.Status, body
}

// Every refusal carries its code, the contract's status and the extra
// fields and headers the code promises; the same request over the RPC
// stream gets the same status and code.
func TestRefusalCodes(t *testing.T) {
	a := newCodesAPI(t, issuer.Config{}, nil)
	setup := func(method, path, body string) {
		t.Helper()
		if res, m := a.do(t, method, path, "admin", body, nil); res.StatusCode != 200 {
			t.Fatalf("setup %s %s %s: %d %v", method, path, body, res.StatusCode, m)
		}
	}
	setup("POST", "/v1/locks/held/acquire", `{"holder":"a","leaseMs":60000}`)
	setup("POST", "/v1/locks/delayed/acquire", `{"holder":"a","leaseMs":1000,"lockDelayMs":5000}`)
	setup("POST", "/v1/locks/lapsed/acquire", `{"holder":"a","leaseMs":1000}`)
	setup("POST", "/v1/semaphores/jobs/acquire", `{"holder":"a","permits":1}`)
	setup("POST", "/v1/fence/marked", `{"token":5}`)
	setup("POST", "/v1/locks/issued/acquire", `{"holder":"a"}`)
	setup("POST", "/v1/locks/issued/acquire", `{"holder":"a"}`) // re-entrant: token 2, so token 1 is superseded
	// The next grant of "maxed" takes its last token; the one after is refused.
	setup("POST", "/v1/locks/maxed/reset", `{"floor":9223372036854775805}`)
	setup("POST", "/v1/locks/maxed/acquire", `{"holder":"a"}`)
	setup("POST", "/v1/locks/maxed/release", `{"holder":"a"}`)
	// A read phase, token 1.
	setup("POST", "/v1/locks/read/acquire", `{"holder":"r","leaseMs":60000,"shared":true}`)
	a.clock.Advance(1500 * time.Millisecond) // the 1 s leases ran out; "delayed" is in its delay
	lapsedAt := clock.TestDate.Add(time.Second)

	type fields map[string]any
	for _, c := range []struct {
		code           string
		method, path   string
		bearer, body   string
		header         http.Header
		status         int
		want           fields         // fields the body must have (nil: present, any value)
		wantHeader     string         // a header the answer must carry
		errorSays      string         // words the message must hold
		rpc            string         // the same request as an RPC line, when the op has one
		check          func(m fields) // more checks
		unchangedState string         // a lock that must still be free afterwards
	}{
		{code: fenceview.EINVALID, method: "POST", path: "/v1/locks/r/acquire", body: `{"holder":"","leaseMs":1000}`, status: 400,
			want: fields{"field": "holder"}, rpc: `{"id":1,"op":"acquire","resource":"r","holder":"","leaseMs":1000}`},
		{code: fenceview.EINVALID, method: "POST", path: "/v1/locks/r/acquire", body: `{"holder":"a","waitMs":300001}`, status: 400,
			want: fields{"field": "waitMs"}, rpc: `{"id":1,"op":"acquire","resource":"r","holder":"a","waitMs":300001}`},
		{code: fenceview.EUNKNOWNFIELD, method: "POST", path: "/v1/locks/r/acquire", body: `{"holder":"a","lease":5000}`, status: 400,
			want: fields{"field": "lease"}, errorSays: `"leaseMs"`, unchangedState: "r",
			rpc: `{"id":1,"op":"acquire","resource":"r","holder":"a","lease":5000}`},
		{code: fenceview.EUNKNOWNFIELD, method: "POST", path: "/v1/locks/r/release", body: `{"holder":"a","waitMs":5}`, status: 400,
			want: fields{"field": "waitMs"}, rpc: `{"id":1,"op":"release","resource":"r","holder":"a","waitMs":5}`},
		{code: fenceview.EUNKNOWNFIELD, method: "POST", path: "/v1/semaphores/jobs/acquire", body: `{"holder":"b","permits":1,"slot":0}`, status: 400,
			want: fields{"field": "slot"}, rpc: `{"id":1,"op":"semaphore-acquire","name":"jobs","holder":"b","permits":1,"slot":0}`},
		{code: fenceview.EUNKNOWNFIELD, method: "POST", path: "/v1/locks/r/reset", body: `{"flor":3}`, status: 400,
			want: fields{"field": "flor"}, errorSays: `"floor"`},
		{code: fenceview.EINVALIDTOKEN, method: "POST", path: "/v1/fence/r", body: ``, status: 400, errorSays: "X-Fencing-Token",
			rpc: `{"id":1,"op":"fence","resource":"r"}`},
		{code: fenceview.EINVALIDTOKEN, method: "POST", path: "/v1/fence/r", body: `{"token":3}`, header: http.Header{"X-Fencing-Token": {"4"}},
			status: 400, errorSays: "X-Fencing-Token"},
		{code: fenceview.ETOOLARGE, method: "POST", path: "/v1/locks/r/acquire", body: `{"holder":"` + strings.Repeat("x", 70<<10) + `"}`, status: 413},
		{code: fenceview.EUNAUTHENTICATED, method: "GET", path: "/v1/locks/r", bearer: "-", status: 401, wantHeader: "WWW-Authenticate"},
		{code: fenceview.EFORBIDDEN, method: "POST", path: "/v1/locks/r/acquire", bearer: a.viewer, body: `{"holder":"a"}`, status: 403},
		{code: fenceview.ENOTFOUND, method: "GET", path: "/v1/nothing", status: 404},
		{code: fenceview.ENOTFOUND, method: "GET", path: "/v1/resources/never", status: 404},
		{code: fenceview.EMETHODNOTALLOWED, method: "DELETE", path: "/v1/locks/r/acquire", status: 405, wantHeader: "Allow"},
		{code: fenceview.ELOCKHELD, method: "POST", path: "/v1/locks/held/acquire", body: `{"holder":"b"}`, status: 409,
			want: fields{"holder": "a", "expiresAt": nil}, rpc: `{"id":1,"op":"acquire","resource":"held","holder":"b"}`},
		{code: fenceview.ELOCKDELAY, method: "POST", path: "/v1/locks/delayed/acquire", body: `{"holder":"b"}`, status: 409,
			want: fields{"availableAt": "2026-09-24T06:14:28.000Z"}, rpc: `{"id":1,"op":"acquire","resource":"delayed","holder":"b"}`},
		{code: fenceview.ELEASEEXPIRED, method: "POST", path: "/v1/locks/lapsed/renew", body: `{"holder":"a"}`, status: 409,
			want: fields{"expiredAt": wire.FormatTime(lapsedAt)}, errorSays: "ran out at " + wire.FormatTime(lapsedAt),
			rpc: `{"id":1,"op":"release","resource":"lapsed","holder":"a"}`},
		{code: fenceview.ENOTOWNER, method: "POST", path: "/v1/locks/held/release", body: `{"holder":"c"}`, status: 409,
			rpc: `{"id":1,"op":"renew","resource":"held","holder":"c"}`},
		{code: fenceview.ENOTHELD, method: "POST", path: "/v1/locks/free/release", body: `{"holder":"a"}`, status: 409,
			rpc: `{"id":1,"op":"renew","resource":"free","holder":"a"}`},
		{code: fenceview.ENOPERMIT, method: "POST", path: "/v1/semaphores/jobs/acquire", body: `{"holder":"b","permits":1}`, status: 409,
			want: fields{"permits": 1.0}, rpc: `{"id":1,"op":"semaphore-acquire","name":"jobs","holder":"b","permits":1}`},
		{code: fenceview.EPERMITSMISMATCH, method: "POST", path: "/v1/semaphores/jobs/acquire", body: `{"holder":"b","permits":2}`, status: 409,
			want: fields{"permits": 1.0}, rpc: `{"id":1,"op":"semaphore-acquire","name":"jobs","holder":"b","permits":2}`},
		{code: fenceview.ENOTLEADER, method: "POST", path: "/v1/elections/e/proclaim", body: `{"candidate":"x","value":"v"}`, status: 409,
			rpc: `{"id":1,"op":"proclaim","name":"e","candidate":"x","value":"v"}`},
		{code: fenceview.EEXHAUSTED, method: "POST", path: "/v1/locks/maxed/acquire", body: `{"holder":"a"}`, status: 409,
			want: fields{"lastToken": float64(math.MaxInt64 - 1)}, rpc: `{"id":1,"op":"acquire","resource":"maxed","holder":"a"}`},
		{code: fenceview.ECONFLICT, method: "POST", path: "/v1/locks/issued/recover", body: `{"token":0}`, status: 409},
		{code: fenceview.ESTALETOKEN, method: "POST", path: "/v1/fence/marked", body: `{"token":3}`, status: 409, wantHeader: "X-Required-Token",
			want: fields{"reason": "stale-token", "required": 5.0}, rpc: `{"id":1,"op":"fence","resource":"marked","token":3}`},
		{code: fenceview.ESUPERSEDED, method: "POST", path: "/v1/fence/issued", body: `{"token":1,"mode":"current"}`, status: 409,
			want: fields{"reason": "superseded"}, rpc: `{"id":1,"op":"fence","resource":"issued","token":1,"mode":"current"}`},
		{code: fenceview.EUNISSUEDTOKEN, method: "POST", path: "/v1/fence/issued", body: `{"token":100}`, status: 409,
			want: fields{"reason": "unissued-token"}, rpc: `{"id":1,"op":"fence","resource":"issued","token":100}`},
		{code: fenceview.EFOREIGNISSUER, method: "POST", path: "/v1/fence/issued", body: `{"token":2,"issuer":"other"}`, status: 409,
			want: fields{"reason": "foreign-issuer"}, rpc: `{"id":1,"op":"fence","resource":"issued","token":2,"issuer":"other"}`},
		{code: fenceview.ESCOPEMISMATCH, method: "POST", path: "/v1/fence/issued", body: `{"token":2,"scope":"resource:held"}`, status: 409,
			want: fields{"reason": "scope-mismatch"}, rpc: `{"id":1,"op":"fence","resource":"issued","token":2,"scope":"resource:held"}`},
		{code: fenceview.ESHAREDTOKEN, method: "POST", path: "/v1/fence/read", body: `{"token":1}`, status: 409,
			want: fields{"reason": "shared-token", "required": 0.0}, rpc: `{"id":1,"op":"fence","resource":"read","token":1,"access":"write"}`},
		{code: fenceview.EINVALID, method: "POST", path: "/v1/fence/read", body: `{"token":1,"access":"READ"}`, status: 400,
			rpc: `{"id":1,"op":"fence","resource":"read","token":1,"access":"READ"}`},
		{code: fenceview.EINVALID, method: "POST", path: "/v1/fence/read", body: `{"token":1,"access":"write"}`,
			header: http.Header{"X-Fencing-Access": {"read"}}, status: 400, errorSays: "X-Fencing-Access"},
	} {
		name := c.code + " " + c.method + " " + c.path
		bearer := c.bearer
		switch bearer {
		case "":
			bearer = "admin"
		case "-":
			bearer = ""
		}
		res, m := a.do(t, c.method, c.path, bearer, c.body, c.header)
		if res.StatusCode != c.status || m["code"] != c.code || m["error"] == nil || m["error"] == "" {
			t.Errorf("%s: %d %v, want %d code %s with an error", name, res.StatusCode, m, c.status, c.code)
			continue
		}
		if statusOf(c.code) != c.status {
			t.Errorf("%s: Statuses says %d", name, statusOf(c.code))
		}
		for k, v := range c.want {
			if got, ok := m[k]; !ok || (v != nil && got != v) {
				t.Errorf("%s: %s = %v, want %v (body %v)", name, k, got, v, m)
			}
		}
		if c.wantHeader != "" && res.Header.Get(c.wantHeader) == "" {
			t.Errorf("%s: no %s header", name, c.wantHeader)
		}
		if msg, _ := m["error"].(string); !strings.Contains(msg, c.errorSays) {
			t.Errorf("%s: error %q does not say %q", name, msg, c.errorSays)
		}
		if c.unchangedState != "" {
			if ls, _ := a.s.Service.Lock(c.unchangedState); ls.Locked || ls.LastToken != 0 {
				t.Errorf("%s: the refused request changed %s: %+v", name, c.unchangedState, ls)
			}
		}
		if c.rpc == "" {
			continue
		}
		status, body := a.rpc(t, c.rpc)
		if status != c.status || body["code"] != c.code {
			t.Errorf("%s over RPC: %d %v, want %d code %s", name, status, body, c.status, c.code)
		}
		for k, v := range c.want {
			if got, ok := body[k]; !ok || (v != nil && got != v) {
				t.Errorf("%s over RPC: %s = %v, want %v (body %v)", name, k, got, v, body)
			}
		}
	}
}

// failingServices answers every lock read with an error that is not the
// API's: a bug, as the server sees it.
type failingServices struct{ fenceview.Services }

func (failingServices) Lock(string) (fenceview.LockState, error) {
	return fenceview.LockState{}, errors.New("disk on fire")
}

// The codes of the server's own state: a limit reached, a service that is
// shutting down, a failure it does not know.
func TestRefusalCodesOfServerState(t *testing.T) {
	limited := newCodesAPI(t, issuer.Config{MaxResources: 1}, nil)
	if res, m := limited.do(t, "POST", "/v1/locks/one/acquire", "admin", `{"holder":"a"}`, nil); res.StatusCode != 200 {
		t.Fatalf("first resource: %d %v", res.StatusCode, m)
	}
	if res, m := limited.do(t, "POST", "/v1/locks/two/acquire", "admin", `{"holder":"a"}`, nil); res.StatusCode != 429 || m["code"] != fenceview.ELIMIT {
		t.Errorf("over --max-resources: %d %v, want 429 limit", res.StatusCode, m)
	}

	closed := newCodesAPI(t, issuer.Config{}, nil)
	closed.s.Service.(*issuer.Service).Close()
	res, m := closed.do(t, "POST", "/v1/locks/r/acquire", "admin", `{"holder":"a"}`, nil)
	if res.StatusCode != 503 || m["code"] != fenceview.EUNAVAILABLE || res.Header.Get("Retry-After") == "" {
		t.Errorf("a closed service: %d %v Retry-After %q, want 503 unavailable with Retry-After", res.StatusCode, m, res.Header.Get("Retry-After"))
	}

	broken := newCodesAPI(t, issuer.Config{}, func(s fenceview.Services) fenceview.Services { return failingServices{s} })
	res, m = broken.do(t, "GET", "/v1/locks/r", "admin", "", nil)
	if res.StatusCode != 500 || m["code"] != fenceview.EINTERNAL || m["error"] != "internal error" {
		t.Errorf("a failure: %d %v, want 500 internal without detail", res.StatusCode, m)
	}
	if status, body := broken.rpc(t, `{"id":1,"op":"lock","resource":"r"}`); status != 500 || body["code"] != fenceview.EINTERNAL {
		t.Errorf("a failure over RPC: %d %v", status, body)
	}
}

// Every code has a status, and the 409s are exactly the state's refusals.
func TestEveryCodeHasAStatus(t *testing.T) {
	for code, status := range Codes() {
		if status < 400 || status > 599 {
			t.Errorf("%s: status %d", code, status)
		}
		err := fenceview.Errorf(code, "x")
		if fenceview.IsRefusal(err) != (status == http.StatusConflict) {
			t.Errorf("%s: IsRefusal %v with status %d", code, fenceview.IsRefusal(err), status)
		}
	}
	if fenceview.IsRefusal(errors.New("plain")) || statusOf("no-such-code") != 500 {
		t.Error("an error without a code is not a refusal, and a code nobody knows is a 500")
	}
}

// The Code schema's enum in the OpenAPI document is exactly the codes the
// API answers with, so neither can gain or lose a code without the other;
// every code a 429 may carry is a 429.
func TestCodeEnumIsTheCodes(t *testing.T) {
	doc := openAPIDoc(t)
	ref := doc.Components.Schemas["Code"]
	if ref == nil {
		t.Fatal("no schema Code")
	}
	codes := Codes()
	inDoc := map[string]bool{}
	for _, v := range ref.Value.Enum {
		code, _ := v.(string)
		if inDoc[code] {
			t.Errorf("Code lists %q twice", code)
		}
		inDoc[code] = true
		if _, ok := codes[code]; !ok {
			t.Errorf("Code lists %q, which the API does not answer with", code)
		}
	}
	for code := range codes {
		if !inDoc[code] {
			t.Errorf("the API answers with %q, which the Code schema's enum lacks", code)
		}
	}
	for _, v := range doc.Components.Schemas["ShedError"].Value.Properties["code"].Value.Enum {
		code, _ := v.(string)
		if codes[code] != http.StatusTooManyRequests {
			t.Errorf("ShedError's code %q is not a 429", code)
		}
	}
}

// The nearest known field is the one a misspelled key begins, else the
// closest by edit distance.
func TestNearestField(t *testing.T) {
	known := []string{"holder", "leaseMs", "waitMs", "lockDelayMs"}
	for key, want := range map[string]string{"lease": "leaseMs", "holdr": "holder", "wait_ms": "waitMs", "lockdelay": "lockDelayMs",
		"LeaseMS": "leaseMs", "x": "holder", strings.Repeat("z", 10000): "holder"} {
		if got := nearest(key, known); got != want {
			t.Errorf("nearest(%.20q) = %q, want %q", key, got, want)
		}
	}
}

// TestMiddlewareCodesAreTheServers: the standalone fencing middleware
// names its own refusals with the server's codes.
func TestMiddlewareCodesAreTheServers(t *testing.T) {
	for mine, server := range map[string]string{
		httpguard.CodeInvalidToken:   fenceview.EINVALIDTOKEN,
		httpguard.CodeInvalidRequest: fenceview.EINVALID,
		httpguard.CodeUnavailable:    fenceview.EUNAVAILABLE,
		httpguard.CodeInternal:       fenceview.EINTERNAL,
	} {
		if mine != server {
			t.Errorf("httpguard says %q where the server says %q", mine, server)
		}
	}
}
