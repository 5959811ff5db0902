package httpapi

import (
	"net/http"
	"strings"

	"github.com/fenceview/fenceview/wasm"
)

// handleGuardWasm serves the embedded WebAssembly guard. Its ETag is the
// SHA-256 of the bytes, so clients revalidate cheaply and get a new module
// exactly when the server ships one.
func (s *Server) handleGuardWasm(w http.ResponseWriter, r *http.Request) {
	serveModule(w, r, wasm.Bytes(), wasm.ETag())
}

// handleGuardExtism serves the same guard as an Extism plugin
// (guard-extism.wasm), the same way.
func (s *Server) handleGuardExtism(w http.ResponseWriter, r *http.Request) {
	serveModule(w, r, wasm.ExtismBytes(), wasm.ExtismETag())
}

func serveModule(w http.ResponseWriter, r *http.Request, module []byte, etag string) {
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "no-cache")
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/wasm")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(module)
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
