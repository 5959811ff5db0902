package httpapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/fenceview/fenceview/wasm/modules"
)

func TestGuardWasm(t *testing.T) {
	s := New(nil, nil, nil)
	get := func(method string, header ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "/guard.wasm", nil)
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w
	}
	w := get(http.MethodGet)
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/wasm" {
		t.Fatalf("GET = %d %q", w.Code, w.Header().Get("Content-Type"))
	}
	if !bytes.Equal(w.Body.Bytes(), modules.Guard.Bytes()) {
		t.Fatal("body is not the embedded module")
	}
	etag := w.Header().Get("ETag")
	if etag != modules.Guard.ETag() || etag[0] != '"' {
		t.Fatalf("ETag = %s, want the strong tag %s", etag, modules.Guard.ETag())
	}
	for _, inm := range []string{etag, `"other", ` + etag, "W/" + etag, "*"} {
		if w := get(http.MethodGet, "If-None-Match", inm); w.Code != http.StatusNotModified || w.Body.Len() != 0 {
			t.Errorf("If-None-Match %s = %d with %d bytes, want 304 and none", inm, w.Code, w.Body.Len())
		}
	}
	if w := get(http.MethodGet, "If-None-Match", `"stale"`); w.Code != http.StatusOK || w.Body.Len() != len(modules.Guard.Bytes()) {
		t.Errorf("stale If-None-Match = %d", w.Code)
	}
	if w := get(http.MethodHead); w.Code != http.StatusOK || w.Body.Len() != 0 {
		t.Errorf("HEAD = %d with %d bytes", w.Code, w.Body.Len())
	}
	if w := get(http.MethodPost); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST = %d, want 405", w.Code)
	}
}
