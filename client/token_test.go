package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/client/fenceviewtest"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/httpguard"
	"github.com/fenceview/fenceview/internal/servertest"
	"github.com/fenceview/fenceview/internal/signedtest"
)

// A holder's token carries the server's signature; a guard in signed mode
// whose keys come from the server's /v1/signing-keys accepts it, offline,
// and refuses the same number unsigned or with another signature.
func TestMutexTokenIsSignedAndVerifiesAtAGuard(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, fenceviewtest.Config{})
	m := c.Mutex("inventory:42", "a")
	n := lock(t, m)
	tok := m.Token()
	if _, err := guard.DecodeCarrier(tok.Signature); err != nil || tok.Number != n || tok.Resource != "inventory:42" || tok.KeyID == "" {
		t.Fatalf("Token() = %+v", tok)
	}
	if want := "X-Fencing-Token: " + strconv.FormatInt(n, 10) + "\nX-Fencing-Signature: " + tok.Signature; tok.String() != want {
		t.Fatalf("String() = %q, want %q", tok.String(), want)
	}
	issuer, keys, err := c.SigningKeys(ctx)
	if err != nil || issuer == "" || len(keys) != 1 || !keys[0].Active || keys[0].KeyID != tok.KeyID {
		t.Fatalf("SigningKeys = %q %+v, %v", issuer, keys, err)
	}
	v, err := c.Verifier(ctx)
	if err != nil || !tok.Verify(v) {
		t.Fatalf("the grant's signature does not verify with the published keys: %v", err)
	}

	// A downstream service in signed mode, fed by the token's headers.
	g := guard.NewSigned(v)
	svc := httptest.NewServer(httpguard.Middleware(httpguard.Config{Checker: g})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	defer svc.Close()
	send := func(h http.Header) int {
		req, _ := http.NewRequest("POST", svc.URL, nil)
		req.Header = h
		resp, err := svc.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := send(tok.Header()); code != http.StatusOK {
		t.Fatalf("signed token: %d", code)
	}
	if code := send(tok.Header()); code != http.StatusOK {
		t.Fatalf("the same grant again: %d", code)
	}
	bigger := tok
	bigger.Number += 1000
	if code := send(bigger.Header()); code != http.StatusConflict {
		t.Fatalf("a bigger number with the grant's signature: %d", code)
	}
	unsigned := tok
	unsigned.Signature = ""
	if code := send(unsigned.Header()); code != http.StatusConflict {
		t.Fatalf("unsigned: %d", code)
	}
	if hw, _ := g.HighWater("inventory:42"); hw != n {
		t.Fatalf("mark %d, want %d", hw, n)
	}
	if err := m.Unlock(ctx); err != nil || !m.Token().IsZero() || m.Token().String() != "" {
		t.Fatalf("after Unlock: %v, %+v", err, m.Token())
	}
}

// With --require-signatures the server's own fence takes the client's signed
// token and refuses a bare number.
func TestFenceRequireSignatures(t *testing.T) {
	t.Run("http", func(t *testing.T) { testFenceRequireSignatures(t, client.Config{DisableRPC: true}) })
	t.Run("rpc", func(t *testing.T) { testFenceRequireSignatures(t, client.Config{}) })
}

func testFenceRequireSignatures(t *testing.T, cfg client.Config) {
	ctx := context.Background()
	_, c := startWith(t, fenceviewtest.Config{RequireSignatures: true}, cfg)
	m := c.Mutex("r", "a")
	lock(t, m)
	if _, err := c.FenceToken(ctx, "r", m.Fencing()); err != nil {
		t.Fatalf("signed grant refused: %v", err)
	}
	_, err := c.Fence(ctx, "r", m.Token().Number)
	var refused *guard.RefusalError
	if !errors.As(err, &refused) || refused.Reason != guard.ReasonBadSignature {
		t.Fatalf("bare number: %v", err)
	}
	forged := m.Fencing()
	forged.Signature = signedtest.Sign(t, signedtest.Other, "r", forged.Token)
	if _, err := c.FenceToken(ctx, "r", forged); !errors.As(err, &refused) || refused.Reason != guard.ReasonBadSignature {
		t.Fatalf("another server's signature: %v", err)
	}
}

// A server that lists a malformed key is not trusted at all.
func TestSigningKeysRefusesMalformedKeys(t *testing.T) {
	for name, body := range map[string]string{
		"short key":  `{"issuer":"x","keys":[{"keyId":"k","alg":"Ed25519","publicKey":"AAAA","active":true}]}`,
		"other alg":  `{"issuer":"x","keys":[{"keyId":"k","alg":"RS256","publicKey":"` + guard.EncodePublicKey(signedtest.Public(signedtest.Old)) + `","active":true}]}`,
		"padded key": `{"issuer":"x","keys":[{"keyId":"k","alg":"Ed25519","publicKey":"` + guard.EncodePublicKey(signedtest.Public(signedtest.Old)) + `=","active":true}]}`,
		"too many":   `{"issuer":"x","keys":[` + strings.Repeat(`{"keyId":"k","alg":"Ed25519","publicKey":"`+guard.EncodePublicKey(signedtest.Public(signedtest.Old))+`"},`, 16) + `{"keyId":"k","alg":"Ed25519","publicKey":"` + guard.EncodePublicKey(signedtest.Public(signedtest.Old)) + `"}]}`,
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(body))
		}))
		c, _ := client.New(client.Config{URL: srv.URL})
		if _, err := c.Verifier(context.Background()); err == nil {
			t.Errorf("%s: trusted", name)
		}
		srv.Close()
	}
}

// A guard whose keys come from the server follows a rotation (old grants
// still pass) and a removal (the removed key's grants stop passing, even
// ones the guard had already verified) after RefreshVerifier.
func TestRefreshVerifierFollowsRotationAndRemoval(t *testing.T) {
	ctx := context.Background()
	srv, c := startWith(t, fenceviewtest.Config{AdminToken: "adm"}, client.Config{Key: "adm"})
	admin := func(method, path string) map[string]any {
		a := servertest.Do(t, nil, servertest.NewRequest(t, method, srv.URL+path, nil, "Authorization", "Bearer adm"))
		if a.Status/100 != 2 {
			t.Fatalf("%s %s: %d %s", method, path, a.Status, a.Raw)
		}
		return a.Body
	}
	m := c.Mutex("r", "a")
	lock(t, m)
	old := m.Token()
	v, err := c.Verifier(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g := guard.NewSigned(v)
	if d, _ := g.CheckSigned("r", old.Number, old.Signature); !d.Accepted {
		t.Fatalf("grant refused: %+v", d)
	}

	rotated := admin("POST", "/v1/signing-keys")
	if err := c.RefreshVerifier(ctx, v); err != nil {
		t.Fatal(err)
	}
	if d, _ := g.CheckSigned("r", old.Number, old.Signature); !d.Accepted {
		t.Fatalf("an old grant after rotation: %+v", d)
	}
	m2 := c.Mutex("r2", "a")
	lock(t, m2)
	if tok := m2.Token(); tok.KeyID != rotated["keyId"] || !tok.Verify(v) {
		t.Fatalf("new grant %+v, want the new key %v", tok, rotated["keyId"])
	}

	admin("DELETE", "/v1/signing-keys/"+old.KeyID)
	if d, _ := g.CheckSigned("r", old.Number, old.Signature); !d.Accepted {
		t.Fatal("the guard stopped trusting the key before it refreshed") // it cannot know yet
	}
	if err := c.RefreshVerifier(ctx, v); err != nil {
		t.Fatal(err)
	}
	if d, _ := g.CheckSigned("r", old.Number, old.Signature); d.Accepted || d.Reason != guard.ReasonBadSignature {
		t.Fatalf("a removed key's grant after refresh: %+v", d)
	}
	if tok := m2.Token(); !tok.Verify(v) {
		t.Fatal("the active key's grant stopped verifying")
	}
}
