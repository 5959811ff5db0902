package httpapi

import (
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/issuer"
)

// Every code a refusal can carry has its anchor in docs/errors.md, where
// the refusal's docUrl points.
func TestEveryCodeIsExplained(t *testing.T) {
	doc, err := os.ReadFile("../../docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	for code := range Codes() {
		if !strings.Contains(string(doc), `<a id="`+code+`"></a>`) {
			t.Errorf("docs/errors.md has no anchor for %s", code)
		}
	}
}

// A refusal's body is its problem: code, message, the field at fault,
// the link to its code, when to retry, and its facts beside them; it sets
// its own headers, and the RPC stream answers the same body.
func TestProblemBody(t *testing.T) {
	a := newCodesAPI(t, issuer.Config{}, nil)
	res, body := a.do(t, "POST", "/v1/locks/orders/acquire", "admin", `{"holder":"w1","lease":5}`, nil)
	want := map[string]any{"code": fenceview.EUNKNOWNFIELD, "field": "lease", "docUrl": DocsErrors + "#" + fenceview.EUNKNOWNFIELD}
	for k, v := range want {
		if body[k] != v {
			t.Errorf("JSON API: %s = %v, want %v (%v)", k, body[k], v, body)
		}
	}
	if res.StatusCode != http.StatusBadRequest || body["error"] == "" {
		t.Errorf("JSON API: %d %v", res.StatusCode, body)
	}
	status, rpcBody := a.rpc(t, `{"id":1,"op":"acquire","resource":"orders","holder":"w1","lease":5}`)
	// The message lists the line's fields (id, op, resource too).
	delete(rpcBody, "error")
	delete(body, "error")
	if status != res.StatusCode || !reflect.DeepEqual(rpcBody, body) {
		t.Errorf("RPC stream: %d %v, JSON API: %d %v", status, rpcBody, res.StatusCode, body)
	}

	// A held lock's refusal: its facts beside the problem's members.
	a.do(t, "POST", "/v1/locks/orders/acquire", "admin", `{"holder":"w1"}`, nil)
	res, body = a.do(t, "POST", "/v1/locks/orders/acquire", "admin", `{"holder":"w2"}`, nil)
	if res.StatusCode != http.StatusConflict || body["code"] != fenceview.ELOCKHELD || body["holder"] != "w1" ||
		body["docUrl"] != DocsErrors+"#lock-held" || body["field"] != nil {
		t.Errorf("held: %d %v", res.StatusCode, body)
	}

	// Headers: the problem sets them, however it is written.
	for _, c := range []struct {
		err    error
		header string
		want   string
	}{
		{fenceview.Errorf(fenceview.EUNAUTHENTICATED, "x"), "WWW-Authenticate", `Bearer realm="fenceview"`},
		{fenceview.Errorf(fenceview.EUNAVAILABLE, "x"), "Retry-After", "1"},
		{&fenceview.Error{Code: fenceview.EOVERLOADED, Message: "x", Fields: map[string]any{"retryAfterMs": int64(1001)}}, "Retry-After", "2"},
	} {
		h := http.Header{}
		p := problemOf(c.err)
		p.SetHeader(h)
		if got := h.Get(c.header); got != c.want {
			t.Errorf("%s: %s %q, want %q", p.Code, c.header, got, c.want)
		}
		if got := string(p.AppendJSON(nil)); !strings.Contains(got, `"docUrl":"`+DocsErrors+"#"+p.Code+`"`) {
			t.Errorf("%s: body %s", p.Code, got)
		}
	}
}
