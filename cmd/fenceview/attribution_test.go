package main

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
)

// staleResource leaves resource r with mark 2, so a fence of token 1 is
// refused and lands in the rejection history with its source.
func staleResource(s *testServer) {
	s.t.Helper()
	s.acquire("r", "a", 1000)
	s.do("POST", "/v1/locks/r/release", map[string]any{"holder": "a"})
	if r := s.fence("r", tokenOf(s.acquire("r", "b", 1000))); r.Status != 200 {
		s.t.Fatalf("fence token 2: %d %s", r.Status, r.Raw)
	}
}

func rejectionSources(s *testServer) []string {
	s.t.Helper()
	r := s.do("GET", "/v1/rejections?limit=1000", nil)
	var out []string
	for _, e := range r.Body["rejections"].([]any) {
		out = append(out, e.(map[string]any)["source"].(string))
	}
	slices.Sort(out)
	return out
}

// rpcFence sends one fence over the RPC stream with the given credential.
func rpcFence(s *testServer, bearer, line string) {
	s.t.Helper()
	h := http.Header{}
	if bearer != "" {
		h.Set("Authorization", "Bearer "+bearer)
	}
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(s.URL(), "http")+"/v1/rpc", h)
	if err != nil {
		s.t.Fatal(err)
	}
	defer conn.Close()
	c := &rpcConn{t: s.t, conn: conn}
	if a := c.send(line)[1]; a.Status != 409 {
		s.t.Fatalf("rpc fence %s: %d %s", line, a.Status, a.Body)
	}
}

// Issue 11: a caller posing as the admin, as the server's api:<host> or as
// another key was recorded as such. With auth on, the source of fences
// (HTTP and RPC) and of reported decisions starts with the key that
// authenticated; the caller's text is only a sub-label.
func TestSourceNamesTheAuthenticatedKey(t *testing.T) {
	s := startServer(t, func(m *Main) { m.AdminToken = "adm" })
	newKey := func(role string) (id, secret string) {
		r := s.do("POST", "/v1/auth/keys", map[string]any{"name": "orders " + role, "role": role})
		if r.Status != 201 {
			t.Fatalf("create key: %d %s", r.Status, r.Raw)
		}
		return r.Body["id"].(string), r.Body["secret"].(string)
	}
	id, secret := newKey("client")
	asKey := []string{"Authorization", "Bearer " + secret}
	guardID, guardSecret := newKey("guard")
	staleResource(s)

	for _, src := range []string{"admin", "api:10.0.0.7", "key:ffffffffffffffff", ""} {
		if r := s.do("POST", "/v1/fence/r", map[string]any{"token": 1, "source": src}, asKey...); r.Status != 409 {
			t.Fatalf("fence as %q: %d %s", src, r.Status, r.Raw)
		}
	}
	for _, src := range []string{"admin", "plugin"} {
		d := map[string]any{"resourceId": "r", "token": 1, "accepted": false, "reason": "stale-token", "source": src}
		if r := s.do("POST", "/v1/decisions", map[string]any{"decisions": []any{d}}, "Authorization", "Bearer "+guardSecret); r.Status != 200 {
			t.Fatalf("report as %q: %d %s", src, r.Status, r.Raw)
		}
	}
	// A reported decision names its source, auth on or off (the contract's
	// body); the key's part is added, never a replacement for it.
	noSource := map[string]any{"resourceId": "r", "token": 1, "accepted": false, "reason": "stale-token"}
	if r := s.do("POST", "/v1/decisions", map[string]any{"decisions": []any{noSource}}, "Authorization", "Bearer "+guardSecret); r.Status != 400 {
		t.Fatalf("report without a source: %d %s", r.Status, r.Raw)
	}
	rpcFence(s, secret, `{"id":1,"op":"fence","resource":"r","token":1,"source":"admin"}`)
	rpcFence(s, secret, `{"id":1,"op":"fence","resource":"r","token":1}`)
	// The admin token is "admin", its text a sub-label too.
	if r := s.do("POST", "/v1/fence/r", map[string]any{"token": 1, "source": "api:10.0.0.7"}); r.Status != 409 {
		t.Fatalf("admin fence: %d %s", r.Status, r.Raw)
	}
	// A label that would not fit after the key's part is refused, not cut.
	if r := s.do("POST", "/v1/fence/r", map[string]any{"token": 1, "source": strings.Repeat("s", 190)}, asKey...); r.Status != 400 {
		t.Fatalf("long label: %d %s", r.Status, r.Raw)
	}

	k, g := "key:"+id, "key:"+guardID
	want := []string{"admin/api:10.0.0.7", g + "/admin", g + "/plugin", k, k, k + "/admin", k + "/admin", k + "/api:10.0.0.7", k + "/key:ffffffffffffffff"}
	slices.Sort(want)
	if got := rejectionSources(s); !slices.Equal(got, want) {
		t.Fatalf("recorded sources\n got %q\nwant %q", got, want)
	}
}

// With auth off nobody is told apart: the caller's text is recorded as
// given, and without one the server names the client's host.
func TestSourceWithAuthOffIsUnchanged(t *testing.T) {
	s := startServer(t)
	staleResource(s)
	for _, src := range []string{"admin", ""} {
		if r := s.do("POST", "/v1/fence/r", map[string]any{"token": 1, "source": src}); r.Status != 409 {
			t.Fatalf("fence as %q: %d %s", src, r.Status, r.Raw)
		}
	}
	if r := report(s, map[string]any{"resourceId": "r", "token": 1, "accepted": false, "reason": "stale-token", "source": "api:10.0.0.7"}); r.Status != 200 {
		t.Fatalf("report: %d %s", r.Status, r.Raw)
	}
	if r := report(s, map[string]any{"resourceId": "r", "token": 1, "accepted": false, "reason": "stale-token"}); r.Status != 400 {
		t.Fatalf("report without a source: %d %s", r.Status, r.Raw)
	}
	rpcFence(s, "", `{"id":1,"op":"fence","resource":"r","token":1}`)
	rpcFence(s, "", `{"id":1,"op":"fence","resource":"r","token":1,"source":"plugin/x"}`)
	want := []string{"admin", "api:10.0.0.7", "api:127.0.0.1", "plugin/x", "rpc:127.0.0.1"}
	if got := rejectionSources(s); !slices.Equal(got, want) {
		t.Fatalf("recorded sources\n got %q\nwant %q", got, want)
	}
}
