package httpapi

import (
	"testing"

	"github.com/fenceview/fenceview/internal/issuer"
)

// Every body is strict, the admin and report routes' too: another
// capitalisation or a second spelling of a field is an unknown field, and
// the request changes nothing.
func TestStrictInputOnEveryRoute(t *testing.T) {
	a := newCodesAPI(t, issuer.Config{}, nil)
	// A resource with a lock and a mark, to see that reset and recover change nothing.
	if res, _ := a.do(t, "POST", "/v1/locks/r/acquire", "admin", `{"holder":"h"}`, nil); res.StatusCode != 200 {
		t.Fatalf("acquire: %d", res.StatusCode)
	}
	_, before := a.do(t, "GET", "/v1/resources/r", "admin", "", nil)
	keysBefore := len(a.s.Auth.List())

	for _, c := range []struct{ path, body, field string }{
		{"/v1/locks/r/reset", `{"FLOOR":50}`, "FLOOR"},
		{"/v1/locks/r/reset", `{"Floor":50}`, "Floor"},
		{"/v1/locks/r/recover", `{"Token":80}`, "Token"},
		{"/v1/auth/keys", `{"name":"dup","role":"client","resources":["orders/"],"Resources":[]}`, "Resources"},
		{"/v1/auth/keys", `{"Name":"x","role":"client"}`, "Name"},
		{"/v1/decisions", `{"decisions":[{"resourceId":"r","Token":5,"accepted":false,"required":6,"reason":"stale-token"}]}`, "Token"},
		{"/v1/decisions", `{"Decisions":[]}`, "Decisions"},
	} {
		res, body := a.do(t, "POST", c.path, "admin", c.body, nil)
		if res.StatusCode != 400 || body["code"] != "unknown-field" || body["field"] != c.field {
			t.Errorf("POST %s %s: %d %v, want 400 unknown-field naming %s", c.path, c.body, res.StatusCode, body, c.field)
		}
	}
	_, after := a.do(t, "GET", "/v1/resources/r", "admin", "", nil)
	if before["highWaterMark"] != after["highWaterMark"] || before["lastToken"] != after["lastToken"] || before["highWaterMark"] == nil {
		t.Errorf("a refused body changed the resource: %v, then %v", before, after)
	}
	if n := len(a.s.Auth.List()); n != keysBefore {
		t.Errorf("a refused body made a key: %d keys, then %d", keysBefore, n)
	}
	_, rej := a.do(t, "GET", "/v1/rejections?resource=r", "admin", "", nil)
	if rows, _ := rej["rejections"].([]any); len(rows) != 0 {
		t.Errorf("a refused report was recorded: %v", rej)
	}
}
