package httpapi

import (
	"net/http"
	"strings"

	"github.com/fenceview/fenceview/internal/modules"
)

// serveModule serves a published WebAssembly module (guard.wasm, ...). Its
// ETag is the SHA-256 of the bytes, so clients revalidate cheaply and get a
// new module exactly when the server ships one.
func serveModule(m modules.Module) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		serveBytes(w, r, m.ETag(), m.Bytes())
	}
}

func serveBytes(w http.ResponseWriter, r *http.Request, etag string, b []byte) {
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "no-cache")
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/wasm")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(b)
	}
}

// etagMatches applies If-None-Match: "*" or any listed tag, compared
// weakly as RFC 9110 asks for this header.
func etagMatches(header, etag string) bool {
	for _, tag := range strings.Split(header, ",") {
		tag = strings.TrimSpace(tag)
		if tag == "*" || strings.TrimPrefix(tag, "W/") == etag {
			return true
		}
	}
	return false
}
