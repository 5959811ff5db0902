package httpapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/fenceview/fenceview/internal/modules"
)

func TestGuardWasm(t *testing.T) { testModule(t, modules.Guard) }

// The Extism plugin is served like guard.wasm.
func TestGuardExtismWasm(t *testing.T) {
	if modules.Extism.Name() != "guard-extism.wasm" {
		t.Fatalf("published as %s", modules.Extism.Name())
	}
	testModule(t, modules.Extism)
}

func testModule(t *testing.T, m modules.Module) {
	s := New(nil, nil, nil)
	get := func(method string, header ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "/"+m.Name(), nil)
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
	if !bytes.Equal(w.Body.Bytes(), m.Bytes()) {
		t.Fatal("body is not the embedded module")
	}
	etag := w.Header().Get("ETag")
	if etag != m.ETag() || etag[0] != '"' {
		t.Fatalf("ETag = %s, want the strong tag %s", etag, m.ETag())
	}
	for _, inm := range []string{etag, `"other", ` + etag, "W/" + etag, "*"} {
		if w := get(http.MethodGet, "If-None-Match", inm); w.Code != http.StatusNotModified || w.Body.Len() != 0 {
			t.Errorf("If-None-Match %s = %d with %d bytes, want 304 and none", inm, w.Code, w.Body.Len())
		}
	}
	if w := get(http.MethodGet, "If-None-Match", `"stale"`); w.Code != http.StatusOK || w.Body.Len() != len(m.Bytes()) {
		t.Errorf("stale If-None-Match = %d", w.Code)
	}
	if w := get(http.MethodHead); w.Code != http.StatusOK || w.Body.Len() != 0 {
		t.Errorf("HEAD = %d with %d bytes", w.Code, w.Body.Len())
	}
	if w := get(http.MethodPost); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST = %d, want 405", w.Code)
	}
}

// The http-wasm handler for proxies is served like guard.wasm.
func TestGuardHTTPWasm(t *testing.T) {
	if modules.HTTP.Name() != "guard-http.wasm" {
		t.Fatalf("published as %s", modules.HTTP.Name())
	}
	testModule(t, modules.HTTP)
}
