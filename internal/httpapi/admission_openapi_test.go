package httpapi

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/fenceview/fenceview"
)

// TestAdmittedRoutesDocument429: every route admission can shed documents
// its 429 in internal/api/openapi.yaml: a body whose code may be overloaded
// or limit, with retryAfterMs, and the Retry-After header.
func TestAdmittedRoutesDocument429(t *testing.T) {
	doc := openAPIDoc(t)
	for _, o := range operations {
		if !o.admitted() {
			continue
		}
		route := o.route
		method, path, _ := strings.Cut(route, " ")
		item := doc.Paths.Find(path)
		if item == nil || item.GetOperation(method) == nil {
			t.Errorf("%s: not in the document", route)
			continue
		}
		resp := item.GetOperation(method).Responses.Status(http.StatusTooManyRequests)
		if resp == nil {
			t.Errorf("%s: no 429 response", route)
			continue
		}
		if resp.Value.Headers["Retry-After"] == nil {
			t.Errorf("%s: its 429 lacks the Retry-After header", route)
		}
		body := resp.Value.Content.Get("application/json")
		if body == nil {
			t.Errorf("%s: its 429 has no JSON body", route)
			continue
		}
		props := body.Schema.Value.Properties
		for _, p := range []string{"code", "error", "retryAfterMs"} {
			if props[p] == nil {
				t.Errorf("%s: its 429 body lacks %s", route, p)
			}
		}
		if props["code"] != nil {
			for _, code := range []string{fenceview.EOVERLOADED, fenceview.ELIMIT} {
				if !slices.Contains(props["code"].Value.Enum, any(code)) {
					t.Errorf("%s: its 429 code enum lacks %s", route, code)
				}
			}
		}
	}
}
