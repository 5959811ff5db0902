package server_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fenceview/fenceview/internal/clock"
	"github.com/fenceview/fenceview/internal/server"
	"github.com/fenceview/fenceview/internal/servertest"
)

func form(t *testing.T, s *servertest.Server, path string, v url.Values, cookie *http.Cookie) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", s.URL()+path, strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", s.URL()) // as a browser sends it
	if cookie != nil {
		req.AddCookie(cookie)
	}
	res, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

func page(t *testing.T, s *servertest.Server, path string, cookie *http.Cookie) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", s.URL()+path, nil)
	req.Header.Set("Accept", "text/html")
	if cookie != nil {
		req.AddCookie(cookie)
	}
	res, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Location"), string(b)
}

// The dashboard behind a login: a key of any role opens a server-side
// session in an HttpOnly, SameSite=Strict cookie; pages, feed and history
// show the key's resources only; logout and revocation end it.
func TestDashboardLogin(t *testing.T) {
	fc := clock.NewFake(clock.TestDate)
	s := servertest.Start(t, server.Config{AdminToken: admin, Clock: fc})
	id, viewer := newKey(t, s, "team-a viewer", "viewer", "team-a/")
	for _, r := range []string{"team-a/x", "team-b/secret-project"} {
		call(t, nil, "POST", s.URL()+"/v1/locks/"+url.PathEscape(r)+"/acquire", admin, acquireBody("holder-of-"+r))
		call(t, nil, "POST", s.URL()+"/v1/fence/"+url.PathEscape(r), admin, map[string]any{"token": 5})
		call(t, nil, "POST", s.URL()+"/v1/fence/"+url.PathEscape(r), admin, map[string]any{"token": 2})
	}
	if st, loc, _ := page(t, s, "/rejections", nil); st != 303 || loc != "/login?next=%2Frejections" {
		t.Fatalf("no session: %d %s", st, loc)
	}
	if st, _, body := page(t, s, "/login", nil); st != 200 || !strings.Contains(body, `type="password"`) || strings.Contains(body, "team-") {
		t.Fatalf("login page: %d", st)
	}
	if res := form(t, s, "/login", url.Values{"key": {viewer + "x"}}, nil); res.StatusCode != 401 || len(res.Cookies()) != 0 {
		t.Fatalf("wrong key: %d %v", res.StatusCode, res.Cookies())
	}
	// Login CSRF: another origin cannot log a browser in.
	req, _ := http.NewRequest("POST", s.URL()+"/login", strings.NewReader(url.Values{"key": {viewer}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://evil.example")
	if res, _ := noRedirect.Do(req); res.StatusCode != 403 || len(res.Cookies()) != 0 {
		t.Fatalf("cross-site login: %d", res.StatusCode)
	}
	res := form(t, s, "/login", url.Values{"key": {viewer}, "next": {"//evil.example/"}}, nil)
	if res.StatusCode != 303 || res.Header.Get("Location") != "/" {
		t.Fatalf("login: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	var c *http.Cookie
	for _, ck := range res.Cookies() {
		if ck.Name == "fenceview_session" {
			c = ck
		}
	}
	if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure || c.Path != "/" || c.MaxAge <= 0 || strings.Contains(c.Value, viewer) {
		t.Fatalf("session cookie %+v", c)
	}
	for _, p := range []string{"/", "/rejections", "/resources/team-a%2Fx"} {
		st, _, body := page(t, s, p, c)
		if st != 200 || strings.Contains(body, "team-b") || strings.Contains(body, "secret-project") || !strings.Contains(body, "team-a/x") {
			t.Fatalf("%s: %d, other team shown or own missing", p, st)
		}
		if strings.Contains(body, viewer) || strings.Contains(body, admin) {
			t.Fatalf("%s shows a secret", p)
		}
	}
	for _, p := range []string{"/resources/team-b%2Fsecret-project", "/rejections?resource=team-b%2Fsecret-project", "/rejections.csv?resource=team-b%2Fsecret-project"} {
		if st, _, body := page(t, s, p, c); st != 403 || strings.Contains(body, "holder-of") {
			t.Fatalf("%s: %d", p, st)
		}
	}
	if _, _, csv := page(t, s, "/rejections.csv", c); strings.Contains(csv, "team-b") || !strings.Contains(csv, "team-a/x") {
		t.Fatalf("csv: %q", csv)
	}
	// The session also opens the API, with the key's role: reads only.
	if a := call(t, nil, "GET", s.URL()+"/v1/resources", "", nil, "Cookie", c.String()); a.Status != 200 || strings.Contains(a.Raw, "team-b") {
		t.Fatalf("api with session: %d %s", a.Status, a.Raw)
	}
	call(t, nil, "POST", s.URL()+"/v1/locks/team-a%2Fx/release", "", map[string]any{"holder": "holder-of-team-a/x"}, "Cookie", c.String()).wantError(t, 403)
	// Sessions expire.
	fc.Advance(13 * time.Hour)
	if st, _, _ := page(t, s, "/", c); st != 303 {
		t.Fatalf("expired session: %d", st)
	}
	// Logout ends the session; revoking the key ends the others.
	c2 := cookieOf(form(t, s, "/login", url.Values{"key": {viewer}}, nil))
	c3 := cookieOf(form(t, s, "/login", url.Values{"key": {viewer}}, nil))
	if st, _, _ := page(t, s, "/", c2); st != 200 {
		t.Fatalf("second session: %d", st)
	}
	form(t, s, "/logout", nil, c2)
	if st, _, _ := page(t, s, "/", c2); st != 303 {
		t.Fatalf("after logout: %d", st)
	}
	call(t, nil, "DELETE", s.URL()+"/v1/auth/keys/"+id, admin, nil)
	if st, _, _ := page(t, s, "/", c3); st != 303 {
		t.Fatalf("after revoking the key: %d", st)
	}
	// Under TLS the cookie is Secure.
	p := newPKI(t)
	ts := servertest.Start(t, server.Config{AdminToken: admin, Access: server.Access{TLSCert: p.certFile, TLSKey: p.keyFile}})
	req, _ = http.NewRequest("POST", ts.URL()+"/login", strings.NewReader(url.Values{"key": {admin}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	hc := p.httpClient(false)
	hc.CheckRedirect = noRedirect.CheckRedirect
	r2, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ck := cookieOf(r2); ck == nil || !ck.Secure {
		t.Fatalf("TLS cookie %+v", ck)
	}
}

func cookieOf(res *http.Response) *http.Cookie {
	for _, ck := range res.Cookies() {
		if ck.Name == "fenceview_session" {
			return ck
		}
	}
	return nil
}
