package dashboard

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
)

// The after-login redirect stays on this server: only "/" followed by a
// character other than "/" or "\", with no control, whitespace or invisible
// formatting character anywhere (a browser drops some and reads the rest
// as "//evil.example").
func TestSafeNext(t *testing.T) {
	for _, c := range []struct{ next, want string }{
		{"", "/"},
		{"/", "/"},
		{"/rejections", "/rejections"},
		{"/resources/a%2Fb?x=1#top", "/resources/a%2Fb?x=1#top"},
		{"/resource?id=%2F%2Fevil.example", "/resource?id=%2F%2Fevil.example"},
		{"/a/b//c", "/a/b//c"},
		{"/ünïcode", "/ünïcode"},
		{"//evil.example", "/"},
		{"/\\evil.example", "/"},
		{"/\t/evil.example", "/"},
		{"/\n/evil.example", "/"},
		{"/\r/evil.example", "/"},
		{"/ /evil.example", "/"},
		{"/x\ty", "/"},
		{"/x\x00y", "/"},
		{"/x\x7fy", "/"},
		{"/x\u0085y", "/"},
		{"/x\u00a0y", "/"},
		{"/x\u2028y", "/"},
		{"/\u200b/evil.example", "/"},
		{"/\ufeff/evil.example", "/"},
		{"/x\xffy", "/"},
		{"\t//evil.example", "/"},
		{"https://evil.example", "/"},
		{"evil.example", "/"},
		{"javascript:alert(1)", "/"},
		{"\\\\evil.example", "/"},
	} {
		if got := safeNext(c.next); got != c.want {
			t.Errorf("safeNext(%q) = %q, want %q", c.next, got, c.want)
		}
	}
}

// A page rendered with no principal in its context (a route mounted
// without the API's access check) shows nothing: no resource, no alarm, no
// count. The missing principal reads as auth.Anonymous, not as an admin.
func TestPagesWithoutPrincipalShowNothing(t *testing.T) {
	e := newEnv(t)
	e.acquire("secret-project/db", "holder-of-secret", time.Minute)
	if _, err := e.svc.Report(context.Background(), []fenceview.Report{
		{ResourceID: "secret-project/db", Token: 1, Accepted: false, Required: 77, Source: "db"},
	}); err != nil {
		t.Fatal(err)
	}
	if p := e.get("/"); !strings.Contains(p.body, "secret-project/db") {
		t.Fatal("the open principal's overview lacks the resource")
	}
	for _, path := range []string{"/static/missing.js", "/", "/rejections", "/resources/secret-project%2Fdb"} {
		rec := httptest.NewRecorder()
		e.mux.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if body := rec.Body.String(); strings.Contains(body, "secret-project") || strings.Contains(body, "holder-of-secret") {
			t.Fatalf("%s without a principal (%d) shows the resource", path, rec.Code)
		}
	}
}
