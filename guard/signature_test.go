package guard_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/ledger"
	"github.com/fenceview/fenceview/internal/guardtest"
	"github.com/fenceview/fenceview/internal/signedtest"
)

func TestMessageFormat(t *testing.T) {
	got := string(guard.Message("shard-0042", 1847))
	if got != "fenceview/v1 shard-0042 1847" {
		t.Fatalf("Message = %q", got)
	}
	// UTF-8 ids are signed as their bytes, spaces and all.
	if got := string(guard.Message("заказ 42", 9223372036854775807)); got != "fenceview/v1 заказ 42 9223372036854775807" {
		t.Fatalf("Message = %q", got)
	}
}

// A signature made by Sign verifies with the standard library alone, over
// exactly the documented bytes: nothing in the format is fenceview-only.
func TestSignIsPlainEd25519(t *testing.T) {
	sig, err := guard.Sign(signedtest.Old, "shard-0042", 1847)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || len(raw) != 64 || strings.ContainsAny(sig, "=+/") {
		t.Fatalf("signature text %q: %v", sig, err)
	}
	if !ed25519.Verify(signedtest.Public(signedtest.Old), []byte("fenceview/v1 shard-0042 1847"), raw) {
		t.Fatal("signature does not verify over the documented message")
	}
	for _, bad := range []struct {
		id  string
		tok int64
	}{{"", 1}, {"x\n", 1}, {"r", 0}, {"r", -1}} {
		if _, err := guard.Sign(signedtest.Old, bad.id, bad.tok); err == nil {
			t.Errorf("Sign(%q, %d) signed invalid input", bad.id, bad.tok)
		}
	}
}

func TestDecodeStrict(t *testing.T) {
	sig, _ := guard.Sign(signedtest.Old, "r", 1)
	raw, err := guard.DecodeSignature(sig)
	if err != nil || guard.EncodeSignature(raw[:]) != sig {
		t.Fatalf("round trip: %v", err)
	}
	last := sig[len(sig)-1]
	bad := map[string]string{
		"empty":          "",
		"padded":         sig + "==",
		"one short":      sig[:len(sig)-1],
		"one long":       sig + "A",
		"newline inside": sig[:40] + "\n" + sig[41:],
		"CR at end":      sig[:len(sig)-1] + "\r",
		"space":          " " + sig[1:],
		"std alphabet":   sig[:10] + "+" + sig[11:],
		"slash":          sig[:10] + "/" + sig[11:],
		"non-canonical":  sig[:len(sig)-1] + string(last+1),
		"63 bytes":       guard.EncodeSignature(make([]byte, 63)),
		"65 bytes":       guard.EncodeSignature(make([]byte, 65)),
		"NUL":            sig[:20] + "\x00" + sig[21:],
	}
	for name, s := range bad {
		if _, err := guard.DecodeSignature(s); !errors.Is(err, guard.ErrInvalidSignature) {
			t.Errorf("%s: DecodeSignature(%q) err = %v", name, s, err)
		}
	}

	pub := guard.EncodePublicKey(signedtest.Public(signedtest.Old))
	if k, err := guard.DecodePublicKey(pub); err != nil || !k.Equal(signedtest.Public(signedtest.Old)) {
		t.Fatalf("DecodePublicKey round trip: %v", err)
	}
	for _, s := range []string{"", pub + "=", pub[:42], pub + "A", pub[:42] + string(pub[42]+1), guard.EncodePublicKey(make([]byte, 33)), base64.StdEncoding.EncodeToString(make([]byte, 32))} {
		if _, err := guard.DecodePublicKey(s); !errors.Is(err, guard.ErrInvalidPublicKey) {
			t.Errorf("DecodePublicKey(%q) err = %v", s, err)
		}
	}
}

// The one table of signed cases, through every native guard type.
func TestSignedTable(t *testing.T) {
	t.Run("Guard", func(t *testing.T) {
		v := &guard.Verifier{}
		g := guard.NewSigned(v)
		signedtest.Run(t, v, func(r string, tok int64, sig string) (guard.Decision, error) {
			return g.CheckSigned(r, tok, sig)
		}, signedtest.Options{})
	})
	t.Run("Guard raw", func(t *testing.T) {
		v := &guard.Verifier{}
		g := guard.NewSigned(v)
		signedtest.Run(t, v, func(r string, tok int64, sig string) (guard.Decision, error) {
			return g.CheckSignedBytes(r, tok, rawOf(sig))
		}, signedtest.Options{})
	})
	t.Run("Guard envelope", func(t *testing.T) {
		v := &guard.Verifier{}
		g := guard.NewSigned(v)
		signedtest.Run(t, v, func(r string, tok int64, sig string) (guard.Decision, error) {
			return g.CheckToken("", r, guard.Token{Token: tok, Signature: sig})
		}, signedtest.Options{})
	})
	t.Run("Ledger over a Verifier", func(t *testing.T) {
		v := &guard.Verifier{}
		l := &guardtest.Ledger{}
		l.UseVerifier(v)
		signedtest.Run(t, v, func(r string, tok int64, sig string) (guard.Decision, error) {
			return l.CheckSigned(r, tok, sig)
		}, signedtest.Options{})
	})
}

// rawOf is the raw form of a signature text for the byte entry points: the
// decoded bytes when it is well formed, else its own bytes (a malformed
// text stands for a malformed raw signature).
func rawOf(sig string) []byte {
	if raw, err := guard.DecodeCarrier(sig); err == nil {
		return raw
	}
	return []byte(sig)
}

// In signed mode a bare number is refused by every unsigned entry point,
// with the mark it would have been compared with, and moves nothing.
func TestSignedRefusesUnsigned(t *testing.T) {
	v, _ := guard.NewVerifier(signedtest.Public(signedtest.Old))
	g, l := guard.NewSigned(v), &guardtest.Ledger{}
	l.UseVerifier(v)
	sig := signedtest.Sign(t, signedtest.Old, "r", 4)
	for name, c := range map[string]interface {
		Check(string, int64) (guard.Decision, error)
		CheckSigned(string, int64, string) (guard.Decision, error)
		Marks() map[string]int64
	}{"guard": g, "ledger": l} {
		if d, err := c.CheckSigned("r", 4, sig); err != nil || !d.Accepted {
			t.Fatalf("%s: signed 4 = %+v, %v", name, d, err)
		}
		d, err := c.Check("r", 1<<40)
		if err != nil || d.Accepted || d.Reason != guard.ReasonBadSignature || d.Required != 4 {
			t.Errorf("%s: unsigned Check = %+v, %v", name, d, err)
		}
		if _, err := c.Check("", 5); !errors.Is(err, guard.ErrInvalidResourceID) {
			t.Errorf("%s: invalid id err = %v", name, err)
		}
		if m := c.Marks(); m["r"] != 4 || len(m) != 1 {
			t.Errorf("%s: marks %v", name, m)
		}
	}
	h, _ := g.Handle("r")
	if d, err := g.CheckHandle(h, 99); err != nil || d.Reason != guard.ReasonBadSignature {
		t.Errorf("CheckHandle in signed mode = %+v, %v", d, err)
	}
}

// The WebAssembly guard's way in: a ledger that is told to trust a key
// becomes a signed one; a Guard told to trust one does too.
func TestTrust(t *testing.T) {
	var u guardtest.Ledger
	for name, l := range map[string]interface {
		Check(string, int64) (guard.Decision, error)
		CheckSigned(string, int64, string) (guard.Decision, error)
		Trust([]byte) error
	}{"guard": guard.New(), "ledger": &u} {
		if d, _ := l.Check("r", 3); !d.Accepted {
			t.Fatalf("%s: unsigned refused: %+v", name, d)
		}
		if err := l.Trust(make([]byte, 31)); !errors.Is(err, guard.ErrInvalidPublicKey) {
			t.Fatalf("%s: Trust(31 bytes) = %v", name, err)
		}
		if d, _ := l.Check("r", 4); !d.Accepted {
			t.Fatalf("%s: a refused key put it in signed mode", name)
		}
		if err := l.Trust(signedtest.Public(signedtest.Old)); err != nil {
			t.Fatal(err)
		}
		if d, _ := l.Check("r", 5); d.Reason != guard.ReasonBadSignature || d.Required != 4 {
			t.Fatalf("%s: Check after Trust = %+v", name, d)
		}
		if d, _ := l.CheckSigned("r", 5, signedtest.Sign(t, signedtest.Old, "r", 5)); !d.Accepted {
			t.Fatalf("%s: signed 5 = %+v", name, d)
		}
	}
	// A ledger over a shared Verifier leaves its keys to the Verifier.
	u = guardtest.Ledger{}
	u.UseVerifier(&guard.Verifier{})
	if err := u.Trust(signedtest.Public(signedtest.Old)); err == nil {
		t.Fatal("a ledger over a Verifier trusted a key of its own")
	}
}

// A guard that is not in signed mode keeps the plain rule and ignores
// signatures, good or bad.
func TestUnsignedGuardIgnoresSignatures(t *testing.T) {
	g := guard.New()
	if d, err := g.CheckSigned("r", 7, "garbage"); err != nil || !d.Accepted {
		t.Fatalf("= %+v, %v", d, err)
	}
	if d, _ := g.CheckSignedBytes("r", 6, nil); d.Accepted || d.Reason != guard.ReasonStale {
		t.Fatalf("= %+v", d)
	}
	if g.Verifier() != nil {
		t.Fatal("unsigned guard has a verifier")
	}
}

// A guard remembers a verification only for the exact (resource, token,
// signature): the cache never lends a verified signature to anything else.
func TestCacheIsExact(t *testing.T) {
	v, _ := guard.NewVerifier(signedtest.Public(signedtest.Old))
	g := guard.NewSigned(v)
	s7 := signedtest.Sign(t, signedtest.Old, "r", 7)
	if d, _ := g.CheckSigned("r", 7, s7); !d.Accepted {
		t.Fatal(d)
	}
	// Same resource and signature, another token; same token and signature,
	// another resource; same resource and token, a corrupted signature.
	raw, _ := guard.DecodeSignature(s7)
	raw[0] ^= 1
	for _, c := range []struct {
		r   string
		tok int64
		sig string
	}{{"r", 8, s7}, {"r2", 7, s7}, {"r", 7, guard.EncodeSignature(raw[:])}} {
		if d, _ := g.CheckSigned(c.r, c.tok, c.sig); d.Accepted || d.Reason != guard.ReasonBadSignature {
			t.Errorf("%+v after caching r/7: %+v", c, d)
		}
		if d, _ := g.CheckSignedBytes(c.r, c.tok, rawOf(c.sig)); d.Accepted || d.Reason != guard.ReasonBadSignature {
			t.Errorf("raw %+v after caching r/7: %+v", c, d)
		}
	}
	if d, _ := g.CheckSigned("r", 7, s7); !d.Accepted {
		t.Fatal("the good signature stopped working")
	}
	// A verification remembered from the raw form lends nothing to an
	// empty text, and the other way round.
	for name, l := range map[string]*guard.Guard{"fresh guard": guard.NewSigned(v)} {
		raw7, _ := guard.DecodeSignature(s7)
		if d, _ := l.CheckSignedBytes("r", 7, raw7[:]); !d.Accepted {
			t.Fatalf("%s: raw 7 refused", name)
		}
		if d, _ := l.CheckSigned("r", 7, ""); d.Accepted {
			t.Fatalf("%s: an empty signature passed on a raw verification", name)
		}
		if d, _ := l.CheckSignedBytes("r", 7, nil); d.Accepted {
			t.Fatalf("%s: a nil signature passed", name)
		}
		if d, _ := l.CheckSignedBytes("r", 7, []byte{}); d.Accepted {
			t.Fatalf("%s: an empty raw signature passed", name)
		}
	}
}

func TestVerifierKeys(t *testing.T) {
	if _, err := guard.NewVerifier(make([]byte, 31)); !errors.Is(err, guard.ErrInvalidPublicKey) {
		t.Fatalf("31-byte key: %v", err)
	}
	v := &guard.Verifier{}
	for i := 0; i < guard.MaxTrustedKeys; i++ {
		seed := make([]byte, 32)
		seed[0] = byte(i)
		if err := v.Trust(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)); err != nil {
			t.Fatal(err)
		}
	}
	if err := v.Trust(signedtest.Public(signedtest.Other)); !errors.Is(err, guard.ErrTooManyKeys) {
		t.Fatalf("key %d: %v", guard.MaxTrustedKeys+1, err)
	}
	if err := v.Trust(v.Keys()[3]); err != nil {
		t.Fatalf("trusting a trusted key again: %v", err)
	}
	if v.Distrust(signedtest.Public(signedtest.Other)) {
		t.Fatal("Distrust of an unknown key reported true")
	}
	if err := v.SetKeys([]ed25519.PublicKey{signedtest.Public(signedtest.New)}); err != nil || len(v.Keys()) != 1 {
		t.Fatalf("SetKeys: %v, %d keys", err, len(v.Keys()))
	}
	if !v.VerifyText("r", 2, signedtest.Sign(t, signedtest.New, "r", 2)) || v.VerifyText("r", 2, signedtest.Sign(t, signedtest.Old, "r", 2)) {
		t.Fatal("VerifyText after SetKeys")
	}
	if v.Verify("", 2, make([]byte, 64)) || v.Verify("r", 0, make([]byte, 64)) {
		t.Fatal("Verify accepted invalid input")
	}
}

// Many writers on one signed guard, some forging: the mark ends at the
// highest verified token and no forged token is ever accepted (run with
// -race, the cache's locking is checked too).
func TestSignedConcurrent(t *testing.T) {
	v, _ := guard.NewVerifier(signedtest.Public(signedtest.Old))
	g := guard.NewSigned(v)
	sigs := make([]string, 33)
	for i := 1; i <= 32; i++ {
		sigs[i] = signedtest.Sign(t, signedtest.Old, "r", int64(i))
	}
	forged := signedtest.Sign(t, signedtest.Other, "r", 1000)
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 1; i <= 32; i++ {
				if w%2 == 0 {
					if d, _ := g.CheckSigned("r", 1000, forged); d.Accepted {
						errs <- "forged token accepted"
					}
					continue
				}
				g.CheckSigned("r", int64(i), sigs[i])
				g.CheckSigned("r", int64(i), sigs[i]) // cached
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	if hw, _ := g.HighWater("r"); hw != 32 {
		t.Fatalf("mark %d, want 32", hw)
	}
}

// The ledger with keys of its own (Trust), as guard.wasm runs it, decides
// the signed table as the native guard does, natively; the wasm package
// runs it through wazero and Node. Its keys follow the verifier's (it can
// only add keys, so the table stops before removals).
func TestSignedTableOwnKeys(t *testing.T) {
	v := &guard.Verifier{}
	var l ledger.Ledger
	signedtest.Run(t, v, func(r string, tok int64, sig string) (guard.Decision, error) {
		for _, k := range v.Keys() {
			if err := l.Trust(k); err != nil {
				t.Fatal(err)
			}
		}
		raw := rawOf(sig)
		res, err := l.CheckSigned(r, tok, raw)
		return guard.Decision{Accepted: res.Accepted, Reason: res.Reason, Presented: tok, Required: res.Required}, err
	}, signedtest.Options{StopBeforeRemoval: true})
}

// Reads and writes of shared and exclusive grants' tokens, through the
// native guard.
func TestGuardReadsTable(t *testing.T) {
	v, _ := guard.NewVerifier(signedtest.Public(signedtest.New))
	g := guard.NewSigned(v)
	signedtest.RunReads(t, g.CheckSignedRead, g.CheckSigned, signedtest.Options{})
}
