package server

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// A public route answers as nobody: the error page of a missing static file
// fetched without a credential shows no resource, token or holder, though
// an alarmed resource exists (it used to list every prefix's, as admin).
func TestMissingStaticShowsNothingWithoutCredential(t *testing.T) {
	s := start(t, Config{AdminToken: admin})
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
func sessionOf(t *testing.T, s *Server, secret string) *http.Cookie {
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
