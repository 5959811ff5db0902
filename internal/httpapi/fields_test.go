package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/issuer"
)

// fieldCase is a request refused 400 naming field, over the JSON API
// and, when rpc is set, the RPC stream alike.
type fieldCase struct {
	method, path, body string
	header             http.Header
	rpc                string
	code, field        string
}

func (a *codesAPI) wantField(t *testing.T, c fieldCase) {
	t.Helper()
	code := c.code
	if code == "" {
		code = fenceview.EINVALID
	}
	name := c.method + " " + c.path + " " + c.body
	res, m := a.do(t, c.method, c.path, "admin", c.body, c.header)
	if res.StatusCode != 400 || m["code"] != code || m["field"] != c.field {
		t.Errorf("%q: %d %v, want 400 %s naming field %q", name, res.StatusCode, m, code, c.field)
	}
	if c.rpc == "" {
		return
	}
	status, body := a.rpc(t, c.rpc)
	if status != 400 || body["code"] != code || body["field"] != c.field {
		t.Errorf("%q over RPC: %d %v, want 400 %s naming field %q", c.rpc, status, body, code, c.field)
	}
}

// Invalid UTF-8 in a holder, a candidate or a multi-lock's resources was
// read as U+FFFD and accepted, so "a\xffb" and "a\xfeb" were one holder
// (re-entrant, holdCount 2). Every string a client sends is now valid
// UTF-8 or refused, naming the field, and nothing changes; so is a holder
// of spaces only.
func TestStringsAreUTF8OrRefused(t *testing.T) {
	a := newCodesAPI(t, issuer.Config{}, nil)
	for _, c := range []fieldCase{
		{method: "POST", path: "/v1/locks/u/acquire", body: "{\"holder\":\"a\xffb\"}", field: "holder",
			rpc: "{\"id\":1,\"op\":\"acquire\",\"resource\":\"u\",\"holder\":\"a\xfeb\"}"},
		{method: "POST", path: "/v1/locks/u/acquire", body: `{"holder":"a\udc00b","leaseMs":1000}`, field: "holder",
			rpc: `{"id":1,"op":"acquire","resource":"u","holder":"a\ud800b"}`},
		{method: "POST", path: "/v1/locks/u/acquire", body: `{"holder":"   "}`, field: "holder",
			rpc: `{"id":1,"op":"acquire","resource":"u","holder":" "}`},
		{method: "POST", path: "/v1/locks/u/release", body: "{\"holder\":\"a\xffb\"}", field: "holder",
			rpc: "{\"id\":1,\"op\":\"renew\",\"resource\":\"u\",\"holder\":\"a\xffb\"}"},
		{method: "POST", path: "/v1/semaphores/us/acquire", body: "{\"holder\":\"\xc0\",\"permits\":2}", field: "holder",
			rpc: "{\"id\":1,\"op\":\"semaphore-acquire\",\"name\":\"us\",\"holder\":\"\xc0\",\"permits\":2}"},
		{method: "POST", path: "/v1/locks/acquire-all", body: "{\"resources\":[\"u\",\"v\xff\"],\"holder\":\"h\"}", field: "resources",
			rpc: "{\"id\":1,\"op\":\"acquire-all\",\"resources\":[\"u\",\"v\xfe\"],\"holder\":\"h\"}"},
		{method: "POST", path: "/v1/elections/ue/campaign", body: "{\"candidate\":\"c\xff\"}", field: "candidate",
			rpc: "{\"id\":1,\"op\":\"campaign\",\"name\":\"ue\",\"candidate\":\"c\xff\"}"},
		{method: "POST", path: "/v1/elections/ue/campaign", body: "{\"candidate\":\"c\",\"value\":\"v\xff\"}", field: "value",
			rpc: "{\"id\":1,\"op\":\"campaign\",\"name\":\"ue\",\"candidate\":\"c\",\"value\":\"v\xff\"}"},
		{method: "POST", path: "/v1/elections/ue/campaign", body: `{"candidate":"  "}`, field: "candidate",
			rpc: `{"id":1,"op":"campaign","name":"ue","candidate":"  "}`},
		{method: "POST", path: "/v1/fence/u", body: "{\"token\":1,\"source\":\"s\xff\"}", field: "source",
			rpc: "{\"id\":1,\"op\":\"fence\",\"resource\":\"u\",\"token\":1,\"source\":\"\xff\"}"},
		{method: "POST", path: "/v1/fence/u", body: "{\"token\":1,\"scope\":\"\xff\"}", field: "scope",
			rpc: "{\"id\":1,\"op\":\"fence\",\"resource\":\"u\",\"token\":1,\"scope\":\"\xff\"}"},
		{method: "POST", path: "/v1/fence/u", body: `{"token":1,"holder":"  "}`, field: "holder",
			rpc: `{"id":1,"op":"fence","resource":"u","token":1,"holder":"  "}`},
		{method: "POST", path: "/v1/auth/keys", body: "{\"name\":\"k\xff\",\"role\":\"client\"}", field: "name"},
		{method: "POST", path: "/v1/auth/keys", body: "{\"name\":\"k\",\"role\":\"client\",\"resources\":[\"a\xff/\"]}", field: "resources"},
		{method: "POST", path: "/v1/decisions", body: "{\"decisions\":[{\"resourceId\":\"u\",\"token\":1,\"accepted\":true,\"source\":\"p\xff\"}]}",
			field: "decisions.source"},
		{method: "POST", path: "/v1/decisions", body: `{"decisions":[{"resourceId":"u","token":1,"accepted":false,"reason":"\ud800","source":"p"}]}`,
			field: "decisions.reason"},
		{method: "GET", path: "/v1/rejections?reason=%FF", field: "reason"},
		{method: "GET", path: "/v1/rejections?source=a%C0", field: "source"},
	} {
		a.wantField(t, c)
	}
	for _, id := range []string{"u", "us#0", "v\ufffd", "ue"} {
		if ls, _ := a.s.Service.Lock(id); ls.Locked || ls.LastToken != 0 {
			t.Errorf("a refused request changed %q: %+v", id, ls)
		}
	}
	if n := len(a.s.credentials().List()); n != 1 {
		t.Errorf("%d keys after the refused creations, want the viewer's alone", n)
	}
	// Valid UTF-8 in any script, escaped or not, is served as it is.
	for _, body := range []string{`{"holder":"\u00e9\ud83d\ude00"}`, `{"holder":"заказ"}`, `{"holder":" a "}`} {
		if res, m := a.do(t, "POST", "/v1/locks/ok/acquire", "admin", body, nil); res.StatusCode != 200 {
			t.Errorf("%s: %d %v", body, res.StatusCode, m)
		}
		a.do(t, "POST", "/v1/locks/ok/expire", "admin", "", nil)
	}
}

// A non-integer leaseMs was refused without naming it, as were bad
// limit and since parameters, and two X-Fencing-Token headers got the
// message of a missing token. Each now names the one at fault.
func TestRefusalsNameTheField(t *testing.T) {
	a := newCodesAPI(t, issuer.Config{}, nil)
	for _, c := range []fieldCase{
		{method: "POST", path: "/v1/locks/n/acquire", body: `{"holder":"h","leaseMs":1.5}`, field: "leaseMs",
			rpc: `{"id":1,"op":"acquire","resource":"n","holder":"h","leaseMs":1.5}`},
		{method: "POST", path: "/v1/locks/n/acquire", body: `{"holder":"h","leaseMs":"5000"}`, field: "leaseMs",
			rpc: `{"id":1,"op":"acquire","resource":"n","holder":"h","leaseMs":"5000"}`},
		{method: "POST", path: "/v1/locks/n/acquire", body: `{"holder":"h","waitMs":true}`, field: "waitMs",
			rpc: `{"id":1,"op":"acquire","resource":"n","holder":"h","waitMs":1e3}`},
		{method: "POST", path: "/v1/semaphores/ns/acquire", body: `{"holder":"h","permits":2.0}`, field: "permits",
			rpc: `{"id":1,"op":"semaphore-acquire","name":"ns","holder":"h","permits":"2"}`},
		{method: "POST", path: "/v1/locks/n/reset", body: `{"floor":2.5}`, field: "floor"},
		{method: "POST", path: "/v1/locks/n/recover", body: `{"token":"7"}`, field: "token"},
		{method: "POST", path: "/v1/decisions", body: `{"decisions":[{"resourceId":"n","token":"1","accepted":true,"source":"p"}]}`,
			field: "decisions.token"},
		{method: "GET", path: "/v1/rejections?limit=0", field: "limit"},
		{method: "GET", path: "/v1/rejections?since=yesterday", field: "since"},
		{method: "GET", path: "/v1/rejections?since=2026-09-24T06:00:00Z&until=2026-09-24T05:00:00Z", field: "until"},
		{method: "GET", path: "/v1/rejections?cursor=x", field: "cursor"},
		{method: "GET", path: "/v1/resources?limit=1001", field: "limit"},
		{method: "GET", path: "/v1/resources?prefix=%FF", field: "prefix"},
		{method: "GET", path: "/v1/events?since=-1", field: "since"},
		{method: "POST", path: "/v1/fence/n", header: http.Header{"X-Fencing-Token": {"3", "3"}},
			code: fenceview.EINVALIDTOKEN, field: "X-Fencing-Token"},
		{method: "POST", path: "/v1/fence/n", header: http.Header{"X-Fencing-Token": {"+3"}},
			code: fenceview.EINVALIDTOKEN, field: "X-Fencing-Token"},
		{method: "POST", path: "/v1/fence/n", body: `{"token":-3}`, code: fenceview.EINVALIDTOKEN, field: "token",
			rpc: `{"id":1,"op":"fence","resource":"n","token":-3}`},
		{method: "POST", path: "/v1/fence/n", body: `{"token":3}`, header: http.Header{"X-Fencing-Signature": {"a", "b"}},
			field: "X-Fencing-Signature"},
		{method: "POST", path: "/v1/fence/n", body: `{"token":3,"mode":"strict"}`, field: "mode",
			rpc: `{"id":1,"op":"fence","resource":"n","token":3,"mode":"strict"}`},
	} {
		a.wantField(t, c)
	}
	if res, m := a.do(t, "POST", "/v1/fence/n", "admin", "", http.Header{"X-Fencing-Token": {"3", "3"}}); !strings.Contains(m["error"].(string), "2 X-Fencing-Token headers") {
		t.Errorf("two X-Fencing-Token headers: %d %v, want the message to say so", res.StatusCode, m)
	}
}
