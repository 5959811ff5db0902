package signing_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/signing"
	"github.com/fenceview/fenceview/internal/sqlite"
)

func openDB(t *testing.T, path string) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// openKeyring opens the keyring kept in db, on the clock now (nil: the
// real one).
func openKeyring(t *testing.T, db *sqlite.DB, now func() time.Time) *signing.Keyring {
	t.Helper()
	k, err := signing.Open(context.Background(), db, now)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// The first start makes a key and keeps it: a restart signs with the same
// key, so grants from before the restart still verify.
func TestKeyCreatedOnFirstStartAndKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fenceview.db")
	k1 := openKeyring(t, openDB(t, path), nil)
	keys := k1.Keys()
	if len(keys) != 1 || !keys[0].Active || keys[0].Private() != nil || len(keys[0].Public) != 32 {
		t.Fatalf("keys after first start: %v", keys)
	}
	id, sig, err := k1.Sign("orders", 5, false)
	if err != nil || id != keys[0].ID {
		t.Fatalf("Sign = %q, %v", id, err)
	}

	k2 := openKeyring(t, openDB(t, path), nil)
	if got := k2.Keys(); len(got) != 1 || got[0].ID != keys[0].ID {
		t.Fatalf("keys after restart: %v", got)
	}
	if !k2.Verifier().VerifyText("orders", 5, sig) {
		t.Fatal("a grant signed before the restart does not verify after it")
	}
	if _, sig2, _ := k2.Sign("orders", 5, false); sig2 != sig {
		t.Fatal("the same key signed the same grant differently")
	}
}

// Rotation: the new key signs, the old one still verifies; removal: the old
// key's grants stop verifying, at once and after a restart.
func TestRotateAndRemove(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "fenceview.db")
	now := time.Date(2026, 9, 24, 6, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	k := openKeyring(t, openDB(t, path), clock)
	oldID, oldSig, _ := k.Sign("orders", 5, false)
	newKey, err := k.Rotate(ctx) // same clock reading: still ordered
	if err != nil || newKey.ID == oldID || !newKey.Active || newKey.Private() != nil {
		t.Fatalf("Rotate = %v, %v", newKey, err)
	}
	id, sig, _ := k.Sign("orders", 6, false)
	if id != newKey.ID {
		t.Fatalf("new grants signed by %q, want the new key %q", id, newKey.ID)
	}
	v := k.Verifier()
	if !v.VerifyText("orders", 5, oldSig) || !v.VerifyText("orders", 6, sig) {
		t.Fatal("after rotation, old and new grants must both verify")
	}
	if keys := k.Keys(); len(keys) != 2 || keys[0].ID != newKey.ID || keys[1].Active {
		t.Fatalf("keys after rotation: %v", keys)
	}
	if err := k.Remove(ctx, newKey.ID); fenceview.ErrorCode(err) != fenceview.ECONFLICT {
		t.Fatalf("removing the active key: %v", err)
	}
	if err := k.Remove(ctx, "no-such-key"); fenceview.ErrorCode(err) != fenceview.ENOTFOUND {
		t.Fatalf("removing an unknown key: %v", err)
	}
	if err := k.Remove(ctx, oldID); err != nil {
		t.Fatal(err)
	}
	if v.VerifyText("orders", 5, oldSig) {
		t.Fatal("a removed key's grant still verifies")
	}
	k2 := openKeyring(t, openDB(t, path), clock)
	if keys := k2.Keys(); len(keys) != 1 || keys[0].ID != newKey.ID || !keys[0].Active {
		t.Fatalf("keys after restart: %v", keys)
	}
	if k2.Verifier().VerifyText("orders", 5, oldSig) || !k2.Verifier().VerifyText("orders", 6, sig) {
		t.Fatal("after restart: the removed key must stay removed, the active one kept")
	}
}

func TestRotateIsBounded(t *testing.T) {
	ctx := context.Background()
	k := openKeyring(t, openDB(t, filepath.Join(t.TempDir(), "f.db")), nil)
	for i := 1; i < signing.MaxKeys; i++ {
		if _, err := k.Rotate(ctx); err != nil {
			t.Fatal(i, err)
		}
	}
	if _, err := k.Rotate(ctx); fenceview.ErrorCode(err) != fenceview.ECONFLICT {
		t.Fatalf("rotation %d: %v", signing.MaxKeys, err)
	}
}

// A key from a file (what openssl genpkey writes) signs; it cannot rotate.
func TestFromFile(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	pemBytes, err := signing.MarshalPrivateKeyPEM(priv)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "key.pem")
	os.WriteFile(path, pemBytes, 0o600)
	k, err := signing.FromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, sig, err := k.Sign("r", 1, false)
	v, _ := guard.NewVerifier(priv.Public().(ed25519.PublicKey))
	if err != nil || !v.VerifyText("r", 1, sig) {
		t.Fatalf("file key does not sign: %v", err)
	}
	if _, err := k.Rotate(context.Background()); fenceview.ErrorCode(err) != fenceview.ECONFLICT {
		t.Fatalf("Rotate with a file key: %v", err)
	}
	for name, content := range map[string]string{
		"empty":    "",
		"not PEM":  "hello",
		"RSA type": strings.Replace(string(pemBytes), "PRIVATE KEY", "RSA PRIVATE KEY", 2),
		"garbage":  "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
	} {
		p := filepath.Join(t.TempDir(), "bad.pem")
		os.WriteFile(p, []byte(content), 0o600)
		if _, err := signing.FromFile(p); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
	if _, err := signing.FromFile(filepath.Join(t.TempDir(), "missing.pem")); err == nil {
		t.Error("a missing file loaded")
	}
}

// The private half never shows when a key is printed, even a key that holds
// it (as a Store returns them), nor in a listing.
func TestPrivateKeyNeverPrinted(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, filepath.Join(t.TempDir(), "f.db"))
	k := openKeyring(t, db, nil)
	stored, err := db.SigningKeys(ctx)
	if err != nil || len(stored) != 1 || stored[0].Private() == nil {
		t.Fatalf("stored keys: %v, %v", stored, err)
	}
	priv := stored[0].Private()
	for _, s := range []string{fmt.Sprintf("%v %+v %#v %s", stored[0], stored[0], stored[0], stored[0]), fmt.Sprintf("%v %+v", stored, k.Keys())} {
		for _, form := range []string{fmt.Sprint([]byte(priv[:8])), fmt.Sprintf("%x", []byte(priv[:8])), guard.EncodeSignature(priv)[:10]} {
			if strings.Contains(s, form) {
				t.Fatalf("printed key shows private bytes: %s", s)
			}
		}
	}
	if k.Keys()[0].Private() != nil {
		t.Fatal("Keys returned a private half")
	}
}
