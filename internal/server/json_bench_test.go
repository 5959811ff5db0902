package server

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenceview/fenceview/internal/auth"
)

// discard is a ResponseWriter that keeps nothing: the benchmark measures
// the server's handler chain (instrumentation, access control, limits,
// admission, decoding, the issuer, encoding), not a recorder's copies.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}

// BenchmarkJSONHandler serves JSON API requests through the server's
// whole handler, as its listener would, with a client key's bearer: what
// a request costs outside the network and net/http's own parsing.
//
//	go test ./internal/server -run '^$' -bench JSONHandler -benchmem
func BenchmarkJSONHandler(b *testing.B) {
	ctx := context.Background()
	s, err := Start(ctx, Config{Addr: "127.0.0.1:0", DBPath: filepath.Join(b.TempDir(), "f.db"), AdminToken: strings.Repeat("a", 32)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	_, secret, err := s.Credentials.Create(ctx, "bench", auth.Client, nil)
	if err != nil {
		b.Fatal(err)
	}
	h := s.http.Handler
	do := func(method, path, body string, header ...string) {
		r, _ := http.NewRequest(method, "http://"+s.ln.Addr().String()+path, strings.NewReader(body))
		r.RemoteAddr = "127.0.0.1:40000"
		r.Header.Set("Authorization", "Bearer "+secret)
		r.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		h.ServeHTTP(&discard{h: http.Header{}}, r)
	}
	b.Run("grant-cycle", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			do("POST", "/v1/locks/bench/acquire", `{"holder":"h","leaseMs":30000}`)
			do("POST", "/v1/locks/bench/release", `{"holder":"h"}`)
		}
	})
	// Token 2 is the mark; token 1 is then refused as stale, each time.
	do("POST", "/v1/locks/fenced/acquire", `{"holder":"h","leaseMs":3600000}`)
	do("POST", "/v1/locks/fenced/release", `{"holder":"h"}`)
	do("POST", "/v1/locks/fenced/acquire", `{"holder":"h","leaseMs":3600000}`)
	do("POST", "/v1/fence/fenced", "", "X-Fencing-Token", "2")
	b.Run("fence-refused", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			do("POST", "/v1/fence/fenced", "", "X-Fencing-Token", "1")
		}
	})
	b.Run("not-found", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			do("GET", "/v1/nothing-here", "")
		}
	})
	b.Run("lock-state", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			do("GET", "/v1/locks/fenced", "")
		}
	})
}
