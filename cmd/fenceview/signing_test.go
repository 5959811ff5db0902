package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
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
	v, _ := guard.NewVerifier(priv.Public().(ed25519.PublicKey))
	if f["keyId"] != signing.KeyID(priv.Public().(ed25519.PublicKey)) || !v.VerifyText("shard-0042", 1, sig) {
		t.Fatalf("grant: %s", r.Raw)
	}
	tok := strconv.FormatInt(int64(f["token"].(float64)), 10)
	if got := s.do("POST", "/v1/fence/shard-0042", nil, "X-Fencing-Token", tok); got.Status != 409 || got.Body["reason"] != guard.ReasonBadSignature {
		t.Fatalf("unsigned: %d %s", got.Status, got.Raw)
	}
	// A flipped signature byte of the batch carrier: refused, nothing moves.
	raw, err := guard.DecodeCarrier(sig)
	if err != nil {
		t.Fatal(err)
	}
	raw[9] ^= 1
	if got := s.do("POST", "/v1/fence/shard-0042", nil, "X-Fencing-Token", tok, "X-Fencing-Signature", guard.EncodeSignature(raw)); got.Status != 409 || got.Body["reason"] != guard.ReasonBadSignature {
		t.Fatalf("tampered: %d %s", got.Status, got.Raw)
	}
	if got := s.do("POST", "/v1/fence/shard-0042", nil, "X-Fencing-Token", tok, "X-Fencing-Signature", sig); got.Status != 200 {
		t.Fatalf("signed: %d %s", got.Status, got.Raw)
	}
	// A carrier from a batch of 40 (a 6-hash path, 354 characters) by the
	// same key passes the fence; its sibling's does not.
	ids, tokens := make([]string, 40), make([]int64, 40)
	for i := range ids {
		ids[i], tokens[i] = fmt.Sprintf("other-%d", i), 1
	}
	ids[2] = "shard-0042"
	batch, err := guard.SignBatch(priv, ids, tokens)
	if err != nil || len(batch[2]) != 354 {
		t.Fatalf("SignBatch: %v", err)
	}
	if got := s.do("POST", "/v1/fence/shard-0042", nil, "X-Fencing-Token", tok, "X-Fencing-Signature", batch[3]); got.Status != 409 || got.Body["reason"] != guard.ReasonBadSignature {
		t.Fatalf("a sibling's carrier: %d %s", got.Status, got.Raw)
	}
	if got := s.do("POST", "/v1/fence/shard-0042", nil, "X-Fencing-Token", tok, "X-Fencing-Signature", batch[2]); got.Status != 200 {
		t.Fatalf("a batch of 40: %d %s", got.Status, got.Raw)
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
