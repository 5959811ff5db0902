package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/signing"
)

func TestSigningFlags(t *testing.T) {
	m := NewMain()
	if err := m.ParseFlags([]string{"--signing-key", "k.pem", "-require-signatures"}); err != nil {
		t.Fatal(err)
	}
	if m.SigningKey != "k.pem" || !m.RequireSignatures {
		t.Fatalf("flags: %+v", m)
	}
	m = NewMain()
	if err := m.ParseFlags([]string{"-signing-key=k.pem", "--require-signatures=false"}); err != nil || m.SigningKey != "k.pem" || m.RequireSignatures {
		t.Fatalf("flags: %+v, %v", m, err)
	}
}

// The command with --signing-key and --require-signatures: grants are signed
// by the file's key, and its fence takes only signed tokens.
func TestRequireSignaturesCommand(t *testing.T) {
	priv, keyPath := signingKeyFile(t)
	s := startServer(t, func(m *Main) { m.SigningKey = keyPath; m.RequireSignatures = true })
	r := s.acquire("shard-0042", "client-a", 30000)
	f := r.Body["fencing"].(map[string]any)
	sig, _ := f["signature"].(string)
	raw, err := guard.DecodeSignature(sig)
	if err != nil || f["keyId"] != signing.KeyID(priv.Public().(ed25519.PublicKey)) ||
		!ed25519.Verify(priv.Public().(ed25519.PublicKey), []byte("fenceview/v1 shard-0042 1"), raw[:]) {
		t.Fatalf("grant: %s", r.Raw)
	}
	tok := strconv.FormatInt(int64(f["token"].(float64)), 10)
	if got := s.do("POST", "/v1/fence/shard-0042", nil, "X-Fencing-Token", tok); got.Status != 409 || got.Body["reason"] != guard.ReasonBadSignature {
		t.Fatalf("unsigned: %d %s", got.Status, got.Raw)
	}
	if got := s.do("POST", "/v1/fence/shard-0042", nil, "X-Fencing-Token", tok, "X-Fencing-Signature", sig); got.Status != 200 {
		t.Fatalf("signed: %d %s", got.Status, got.Raw)
	}
	if got := s.do("GET", "/v1/signing-keys", nil); got.Status != 200 || len(got.Body["keys"].([]any)) != 1 {
		t.Fatalf("signing keys: %d %s", got.Status, got.Raw)
	}
}

// signingKeyFile writes a new Ed25519 private key where --signing-key can
// read it.
func signingKeyFile(t *testing.T) (ed25519.PrivateKey, string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pemBytes, err := signing.MarshalPrivateKeyPEM(priv)
	if err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(keyPath, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return priv, keyPath
}
