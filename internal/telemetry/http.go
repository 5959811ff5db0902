package telemetry

import (
	"bufio"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Instrument wraps h, fenceview's router, so every request is timed by
// route pattern and, when accessLog is not nil, logged once it is answered.
// The route is the ServeMux pattern that matched (r.Pattern, set by the
// router on the same request), never the raw path: paths carry resource ids
// that clients choose.
func Instrument(h http.Handler, m *Metrics, accessLog *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		d := time.Since(start)
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		route := r.Pattern
		if route == "" || route == "/" {
			route = "unmatched"
		}
		if m != nil && !rec.hijacked {
			m.observeRequest(route, methodLabel(r.Method), status, d)
		}
		if accessLog != nil {
			if rec.hijacked {
				status = http.StatusSwitchingProtocols
			}
			// The path is logged as received (escaped): ids are the
			// operator's own data, but secrets never travel in paths.
			accessLog.LogAttrs(r.Context(), slog.LevelInfo, "request",
				slog.String("method", truncate(r.Method, maxLoggedMethod)),
				slog.String("path", r.URL.EscapedPath()),
				slog.String("route", route),
				slog.Int("status", status),
				slog.Int64("bytes", rec.bytes),
				slog.Duration("duration", d),
				slog.String("remote", r.RemoteAddr),
			)
		}
	})
}

// methodLabel is the method as a metric label: the standard methods
// (RFC 9110, and PATCH) as themselves, anything else "OTHER". A method is
// any token a client sends, up to the size of a request line: as a label,
// each new one would be a new series kept for the life of the process.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// maxLoggedMethod bounds the method written to the access log: enough for
// every real one, not a megabyte per line for a made-up one.
const maxLoggedMethod = 32

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// recorder notes the status and size of an answer. It passes Hijack and
// Flush through (and Unwrap for http.ResponseController): the event and
// RPC streams upgrade to websockets.
type recorder struct {
	http.ResponseWriter
	status   int
	bytes    int64
	hijacked bool
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(r.ResponseWriter).Hijack()
	if err == nil {
		r.hijacked = true
	}
	return c, rw, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
