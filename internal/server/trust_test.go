package server_test

import (
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/clock"
	"github.com/fenceview/fenceview/internal/server"
	"github.com/fenceview/fenceview/internal/servertest"
)

// A public route answers as nobody: the error page of a missing static file
// fetched without a credential shows no resource, token or holder, though
// an alarmed resource exists (it used to list every prefix's, as admin).
func TestMissingStaticShowsNothingWithoutCredential(t *testing.T) {
	s := servertest.Start(t, server.Config{AdminToken: admin})
	call(t, nil, "POST", s.URL()+"/v1/locks/secret-project%2Fdb/acquire", admin, acquireBody("holder-of-secret"))
	a := call(t, nil, "POST", s.URL()+"/v1/decisions", admin, map[string]any{"decisions": []map[string]any{
		{"resourceId": "secret-project/db", "token": 1, "accepted": false, "required": 77, "source": "db"},
	}})
	if a.Status != 200 {
		t.Fatalf("report: %d %s", a.Status, a.Raw)
	}
	// The admin's own view has the alarm, so the page would show it.
	if st, _, body := page(t, s, "/", sessionOf(t, s, admin)); st != 200 || !strings.Contains(body, "secret-project/db") {
		t.Fatalf("admin overview: %d, alarmed resource missing", st)
	}
	for _, cred := range []string{"", admin} { // a public route looks at no credential, good or bad
		req, _ := http.NewRequest("GET", s.URL()+"/static/no-such-file.js", nil)
		req.Header.Set("Accept", "text/html")
		if cred != "" {
			req.Header.Set("Authorization", "Bearer "+cred)
		}
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, res)
		if res.StatusCode != 404 {
			t.Fatalf("missing static: %d", res.StatusCode)
		}
		for _, leak := range []string{"secret-project", "holder-of-secret", "high-water mark 77", "admin token"} {
			if strings.Contains(body, leak) {
				t.Fatalf("missing static (credential %v) shows %q:\n%s", cred != "", leak, body)
			}
		}
	}
}

// sessionOf logs in with secret and returns the session cookie.
func sessionOf(t *testing.T, s *servertest.Server, secret string) *http.Cookie {
	t.Helper()
	c := cookieOf(form(t, s, "/login", url.Values{"key": {secret}}, nil))
	if c == nil {
		t.Fatal("login gave no session cookie")
	}
	return c
}

func readAll(t *testing.T, res *http.Response) string {
	t.Helper()
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Bad credentials from one address: FailureBurst of them get 401, then the
// address gets 429 with Retry-After before any credential is looked at
// (a right guess looks like a wrong one), until its budget refills.
func TestBadCredentialsAreThrottled(t *testing.T) {
	fc := clock.NewFake(clock.TestDate)
	s := servertest.Start(t, server.Config{AdminToken: admin, Clock: fc})
	_, viewer := newKey(t, s, "v", "viewer")
	for i := 0; i < auth.FailureBurst; i++ {
		call(t, nil, "GET", s.URL()+"/v1/resources", "guess-"+strconv.Itoa(i), nil).wantError(t, 401)
	}
	for _, cred := range []string{"guess-x", viewer, admin} {
		a := call(t, nil, "GET", s.URL()+"/v1/resources", cred, nil)
		a.wantError(t, 429)
		if a.Header.Get("Retry-After") != "1" {
			t.Fatalf("429 with Retry-After %q, want 1", a.Header.Get("Retry-After"))
		}
	}
	// A bad session cookie counts the same.
	call(t, nil, "GET", s.URL()+"/v1/resources", "", nil, "Cookie", auth.SessionCookie+"=forged").wantError(t, 429)
	fc.Advance(auth.FailureInterval)
	if a := call(t, nil, "GET", s.URL()+"/v1/resources", viewer, nil); a.Status != 200 {
		t.Fatalf("after the interval: %d %s", a.Status, a.Raw)
	}
}

// A login storm with a viewer key: LoginBurst logins pass, then 429 with
// Retry-After; the admin's session survives it, and the storm's sessions
// are bounded by its own key.
func TestLoginStormLeavesAdminSession(t *testing.T) {
	fc := clock.NewFake(clock.TestDate)
	s := servertest.Start(t, server.Config{AdminToken: admin, Clock: fc})
	viewerID, viewer := newKey(t, s, "v", "viewer")
	adminCookie := sessionOf(t, s, admin)
	fc.Advance(auth.LoginInterval) // the admin's login is this address's too
	for i := 0; i < auth.LoginBurst; i++ {
		if res := form(t, s, "/login", url.Values{"key": {viewer}}, nil); res.StatusCode != 303 {
			t.Fatalf("login %d: %d", i, res.StatusCode)
		}
	}
	limited := 0
	for i := 0; i < 1000; i++ {
		res := form(t, s, "/login", url.Values{"key": {viewer}}, nil)
		if res.StatusCode != 429 || res.Header.Get("Retry-After") == "" || cookieOf(res) != nil {
			t.Fatalf("login %d past the burst: %d, Retry-After %q", auth.LoginBurst+i, res.StatusCode, res.Header.Get("Retry-After"))
		}
		limited++
	}
	if limited != 1000 || s.Sessions.LenOf(viewerID) != auth.LoginBurst || s.Sessions.LenOf("admin") != 1 {
		t.Fatalf("after the storm: %d limited, %d viewer sessions, %d admin", limited, s.Sessions.LenOf(viewerID), s.Sessions.LenOf("admin"))
	}
	if st, _, _ := page(t, s, "/", adminCookie); st != 200 {
		t.Fatalf("admin's session after the storm: %d", st)
	}
}

// /metrics counts every resource, as /status does: a key limited to some
// prefixes gets 403 (it used to get the global counts), an unrestricted
// viewer gets them.
func TestMetricsNeedUnrestrictedViewer(t *testing.T) {
	s := servertest.Start(t, server.Config{AdminToken: admin})
	_, limited := newKey(t, s, "team-a", "viewer", "team-a/")
	_, viewer := newKey(t, s, "all", "viewer")
	a := call(t, nil, "GET", s.URL()+"/metrics", limited, nil)
	a.wantError(t, 403)
	if strings.Contains(a.Raw, "fenceview_") {
		t.Fatalf("403 with metrics in it: %s", a.Raw)
	}
	if a := call(t, nil, "GET", s.URL()+"/metrics", viewer, nil); a.Status != 200 || !strings.Contains(a.Raw, "fenceview_resources") {
		t.Fatalf("unrestricted viewer: %d", a.Status)
	}
}

// A guard key reports 2^63-1 (accepted, or as a refusal's required mark)
// for an id nobody has locked; a client's next acquire of it is granted,
// with and without --require-signatures.
func TestGuardReportCannotExhaustAnUnusedID(t *testing.T) {
	for _, require := range []bool{false, true} {
		s := servertest.Start(t, server.Config{AdminToken: admin, RequireSignatures: require})
		_, grd := newKey(t, s, "g", "guard")
		_, cli := newKey(t, s, "c", "client")
		a := call(t, nil, "POST", s.URL()+"/v1/decisions", grd, `{"decisions":[
			{"resourceId":"fresh-1","token":9223372036854775807,"accepted":true,"source":"g"},
			{"resourceId":"fresh-2","token":1,"accepted":false,"required":9223372036854775807,"source":"g"}]}`)
		if a.Status != 200 {
			t.Fatalf("require %v: report: %d %s", require, a.Status, a.Raw)
		}
		for _, id := range []string{"fresh-1", "fresh-2"} {
			if a := call(t, nil, "POST", s.URL()+"/v1/locks/"+id+"/acquire", cli, acquireBody("honest")); a.Status != 200 {
				t.Fatalf("require %v: acquire %s after the report: %d %s", require, id, a.Status, a.Raw)
			}
		}
	}
}
