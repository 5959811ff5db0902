package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenceview/fenceview/internal/servertest"
)

// `fenceview --help` lists every command, and each command has its own
// --help: exit 0 and its own usage.
func TestHelpListsEveryCommand(t *testing.T) {
	processTest(t)
	bin := servertest.Binary(t)
	out, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("fenceview --help: %v\n%s", err, out)
	}
	for _, name := range []string{"backup", "keys", "dev-cert"} {
		if !bytes.Contains(out, []byte("fenceview "+name+" ")) || !bytes.Contains(out, []byte("\n  "+name+" ")) {
			t.Errorf("fenceview --help does not list %s:\n%s", name, out)
		}
		for _, help := range []string{"--help", "-h"} {
			sub, err := exec.Command(bin, name, help).CombinedOutput()
			if err != nil || !bytes.HasPrefix(sub, []byte("Usage: fenceview "+name+" ")) {
				t.Errorf("fenceview %s %s: %v\n%s", name, help, err, sub)
			}
		}
	}
	if len(subcommands) != 3 {
		t.Errorf("%d commands; this test knows 3: add the new one above", len(subcommands))
	}
	if out, err := exec.Command(bin, "--no-such-flag").CombinedOutput(); err == nil {
		t.Fatalf("an unknown flag exited 0:\n%s", out)
	}
}

// The files of `fenceview dev-cert` serve TLS with client certificates: a
// client with the client certificate gets in, one without does not. Keys
// are 0600, and a second run overwrites nothing.
func TestDevCertServesMTLS(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	var stdout, stderr bytes.Buffer
	if code := runDevCert(context.Background(), []string{"--dir", dir}, &stdout, &stderr); code != 0 {
		t.Fatalf("dev-cert exited %d: %s", code, stderr.String())
	}
	for name, want := range map[string]os.FileMode{devCA: 0o644, devServerCert: 0o644, devServerKey: 0o600, devClientCert: 0o644, devClientKey: 0o600} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if mode := fi.Mode().Perm(); mode&^want != 0 || (want == 0o600 && mode != 0o600) {
			t.Errorf("%s has mode %o, want %o", name, mode, want)
		}
	}
	file := func(name string) string { return filepath.Join(dir, name) }
	s := startServer(t, func(m *Main) {
		m.TLSCert, m.TLSKey, m.TLSClientCA = file(devServerCert), file(devServerKey), file(devCA)
		m.AdminToken = "dev-cert-admin-token"
	})
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(must(os.ReadFile(file(devCA)))) {
		t.Fatal("no certificate in ca.pem")
	}
	clientCert := must(tls.LoadX509KeyPair(file(devClientCert), file(devClientKey)))
	for _, host := range []string{"127.0.0.1", "localhost"} {
		url := strings.Replace(s.URL(), "127.0.0.1", host, 1) + "/v1/locks/r/acquire"
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{clientCert}}}}
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{"holder":"a"}`))
		req.Header.Set("Authorization", "Bearer "+s.AdminToken)
		res, err := hc.Do(req)
		if err != nil {
			t.Fatalf("mTLS client at %s: %v", host, err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("mTLS acquire at %s: %d", host, res.StatusCode)
		}
	}
	noCert := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if res, err := noCert.Get(s.URL() + "/healthz"); err == nil {
		res.Body.Close()
		t.Fatal("served a client without a certificate")
	}
	// fenceview keys, as the README runs it, with the client certificate.
	stdout.Reset()
	keysArgs := []string{"create", "--server", s.URL(), "--admin-token", s.AdminToken, "--tls-ca", file(devCA), "--name", "orders", "--role", "client"}
	if code := runKeys(context.Background(), append(keysArgs, "--tls-cert", file(devClientCert), "--tls-key", file(devClientKey)), &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "secret:") {
		t.Fatalf("keys create over mTLS: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	if code := runKeys(context.Background(), keysArgs, &stdout, &stderr); code != 1 {
		t.Fatalf("keys create over mTLS without the client certificate: exit %d, want 1", code)
	}
	before := must(os.ReadFile(file(devServerKey)))
	if code := runDevCert(context.Background(), []string{"--dir", dir}, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "exists") {
		t.Fatalf("a second dev-cert into the same directory: exit %d, %s", code, stderr.String())
	}
	if !bytes.Equal(before, must(os.ReadFile(file(devServerKey)))) {
		t.Fatal("a second dev-cert replaced the server key")
	}
}
