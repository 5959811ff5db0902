package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/issuer"
	"github.com/fenceview/fenceview/internal/signedtest"
	"github.com/fenceview/fenceview/internal/sqlite"
)

// The signature carriers of the server's fence with --require-signatures,
// whatever the bytes: nothing is a 5xx, a token is accepted only with the
// issuer's signature of exactly that resource and token (header, body, or
// both agreeing), and nothing else moves the mark.
func FuzzFenceSignature(f *testing.F) {
	good := func(tok int64) string { s, _ := guard.Sign(signedtest.Old, "r", tok); return s }
	f.Add(int64(5), good(5), "")
	f.Add(int64(5), "", good(5))
	f.Add(int64(5), good(5), good(5))
	f.Add(int64(6), good(5), "")
	f.Add(int64(5), good(5)+"==", "")
	f.Add(int64(5), good(5), good(6))
	f.Add(int64(5), strings.Repeat("A", 86), "")
	f.Add(int64(5), "", strings.Repeat("\\u0000", 30))

	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(f.TempDir(), "f.db"))
	if err != nil {
		f.Fatal(err)
	}
	v, _ := guard.NewVerifier(signedtest.Public(signedtest.Old))
	svc, err := issuer.Open(ctx, db, issuer.Config{Issuer: "fuzz", Verifier: v, RequireSignatures: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { svc.Close(); db.Close() })
	s := New(svc, db, nil)

	f.Fuzz(func(t *testing.T, tok int64, header, body string) {
		before, _ := svc.Resource("r")
		b, _ := json.Marshal(map[string]any{"token": tok, "signature": body})
		req := httptest.NewRequest("POST", "/v1/fence/r", strings.NewReader(string(b)))
		if header != "" {
			req.Header["X-Fencing-Signature"] = []string{header}
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		after, _ := svc.Resource("r")
		if w.Code >= 500 {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
		sig := body
		if header != "" {
			sig = header
		}
		verified := tok > 0 && (header == "" || body == "" || header == body) && sig == good(tok)
		if w.Code == http.StatusOK && !verified {
			t.Fatalf("accepted token %d with header %q body %q", tok, header, body)
		}
		if verified && tok >= before.HighWaterMark && w.Code != http.StatusOK {
			t.Fatalf("refused a verified token %d (mark %d): %d %s", tok, before.HighWaterMark, w.Code, w.Body)
		}
		if w.Code != http.StatusOK && after.HighWaterMark != before.HighWaterMark {
			t.Fatalf("a refusal moved the mark from %d to %d", before.HighWaterMark, after.HighWaterMark)
		}
		if w.Code == http.StatusOK && after.HighWaterMark != max(before.HighWaterMark, tok) {
			t.Fatalf("accepted %d: mark %d", tok, after.HighWaterMark)
		}
	})
}
