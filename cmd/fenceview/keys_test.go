package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fenceview/fenceview/internal/servertest"
)

// `fenceview keys` manages the keys of a running server with the admin
// token: the secret is printed once, by create; list never shows it; a
// revoked key stops working.
func TestKeysCommand(t *testing.T) {
	s := startServer(t, func(m *Main) { m.AdminToken = "adm" })
	ctx := context.Background()
	keys := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := runKeys(ctx, append(args, "--server", s.URL()), &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, errs := keys("create", "--name", "orders worker", "--role", "client", "--resource", "orders/", "--resource", "inv/", "--admin-token", "adm")
	if code != 0 {
		t.Fatalf("create: %d %s", code, errs)
	}
	m := regexp.MustCompile(`(?m)^id:\s+(\S+)$[\s\S]*^secret:\s+(\S+)$`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, `"orders/" "inv/"`) {
		t.Fatalf("create printed %q", out)
	}
	id, secret := m[1], m[2]
	s.bearer = secret
	s.acquire("orders/1", "w", 1000)
	if r := s.do("POST", "/v1/locks/other/acquire", map[string]any{"holder": "w"}); r.Status != 403 {
		t.Fatalf("outside the prefixes: %d", r.Status)
	}
	code, out, _ = keys("list", "--admin-token", "adm")
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "orders worker") || strings.Contains(out, secret) || strings.Contains(out, secret[20:]) {
		t.Fatalf("list: %d %q", code, out)
	}
	if code, _, errs := keys("list", "--admin-token", "wrong"); code != 1 || !strings.Contains(errs, "401") {
		t.Fatalf("wrong admin token: %d %q", code, errs)
	}
	t.Setenv("FENCEVIEW_ADMIN_TOKEN", "")
	if code, _, errs := keys("list"); code != 2 || !strings.Contains(errs, "--admin-token") {
		t.Fatalf("no admin token: %d %q", code, errs)
	}
	t.Setenv("FENCEVIEW_ADMIN_TOKEN", "adm")
	for _, bad := range [][]string{{"create", "--name", "x"}, {"create", "--name", "x", "--role", "root"}, {"revoke"}, {"frobnicate"}} {
		if code, _, _ := keys(bad...); code == 0 {
			t.Fatalf("%v succeeded", bad)
		}
	}
	if code, out, errs := keys("revoke", id); code != 0 || !strings.Contains(out, id) {
		t.Fatalf("revoke: %d %s %s", code, out, errs)
	}
	if r := s.do("GET", "/v1/locks/orders%2F1", nil); r.Status != 401 {
		t.Fatalf("revoked key: %d", r.Status)
	}
	if code, _, _ := keys("revoke", id); code != 1 {
		t.Fatalf("second revoke: %d", code)
	}
}

// The real command refuses a non-loopback address without an admin token:
// exit status 2, naming --admin-token, before it opens anything.
func TestRefusesOpenAddressWithoutAdminToken(t *testing.T) {
	db := filepath.Join(t.TempDir(), "f.db")
	p, err := servertest.LaunchProcess(t, servertest.ProcessOptions{DBPath: db, Args: []string{"--addr", "0.0.0.0:0"}, Env: []string{"FENCEVIEW_ADMIN_TOKEN="}})
	if err == nil || p.ExitCode() != 2 || !strings.Contains(p.Log(), "--admin-token") {
		t.Fatalf("exit %v (%d): %s", err, p.ExitCode(), p.Log())
	}
	if _, err := os.Stat(db); err == nil {
		t.Fatal("the refused start created the database")
	}
}

// The access flags parse in both forms and reach the server's config.
func TestAccessFlags(t *testing.T) {
	m := NewMain()
	err := m.ParseFlags([]string{"--addr", "0.0.0.0:8443", "--admin-token", testAdminToken, "--tls-cert", "c.pem", "-tls-key", "k.pem",
		"--tls-client-ca", "ca.pem", "--allowed-host", "a.example", "-allowed-host", "b.example:8080"})
	if err != nil {
		t.Fatal(err)
	}
	if m.TLSCert != "c.pem" || m.TLSKey != "k.pem" || m.TLSClientCA != "ca.pem" || len(m.AllowedHosts) != 2 || m.AllowedHosts[1] != "b.example:8080" {
		t.Fatalf("parsed %+v", m.Access)
	}
	t.Setenv("FENCEVIEW_ADMIN_TOKEN", "")
	m = NewMain()
	if err := m.ParseFlags([]string{"--addr", "0.0.0.0:8080", "--insecure-no-auth"}); err != nil || !m.InsecureNoAuth {
		t.Fatalf("--insecure-no-auth: %v", err)
	}
	m = NewMain()
	if err := m.ParseFlags([]string{"--addr", "0.0.0.0:8080"}); err == nil || !strings.Contains(err.Error(), "--admin-token") {
		t.Fatalf("open address without a token: %v", err)
	}
}
