package ledger_test

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
	"unicode"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/ledger"
	"github.com/fenceview/fenceview/internal/signedtest"
)

// ledger words invalid input exactly as the guard package does, so the
// WebAssembly guard's hosts can give the native errors.
func TestValidationMatchesGuard(t *testing.T) {
	ids := []string{"", "ok", "a\x00", "tab\there", "\xff", "ok\xc3", "c1\u0085", "\u009f", "zero\u200bwidth",
		strings.Repeat("x", 160), strings.Repeat("x", 161), strings.Repeat("€", 54), "заказ/42 🧾"}
	for _, id := range ids {
		want, got := guard.ValidateResourceID(id), ledger.ValidateResourceID(id)
		if (want == nil) != (got == nil) || want != nil && want.Error() != got.Error() {
			t.Errorf("ValidateResourceID(%q): ledger %v, guard %v", id, got, want)
		}
		if got != nil && (!errors.Is(got, ledger.ErrInvalidResourceID) || ledger.Kind(got) != ledger.ErrInvalidResourceID) {
			t.Errorf("ValidateResourceID(%q) = %v: not ErrInvalidResourceID", id, got)
		}
	}
	for _, token := range []int64{1, 0, -1, -1 << 63, 1<<63 - 1} {
		want, got := guard.ValidateToken(token), ledger.ValidateToken(token)
		if (want == nil) != (got == nil) || want != nil && want.Error() != got.Error() {
			t.Errorf("ValidateToken(%d): ledger %v, guard %v", token, got, want)
		}
	}
	var l ledger.Ledger
	if _, err := l.CheckHandle(7, 1); err == nil || err.Error() != "unknown resource handle: 7" || ledger.Kind(err) != ledger.ErrUnknownHandle {
		t.Errorf("unknown handle: %v", err)
	}
}

// Control characters are exactly unicode.IsControl's.
func TestIsControlMatchesUnicode(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue // surrogates are not valid UTF-8: refused before
		}
		id := "x" + string(r)
		if got, want := ledger.ValidateResourceID(id) != nil, unicode.IsControl(r); got != want {
			t.Fatalf("U+%04X: refused %v, unicode.IsControl %v", r, got, want)
		}
	}
}

// Invalid input changes nothing, and a refused signature moves no mark.
func TestLedgerSignedRefusalsChangeNothing(t *testing.T) {
	var l ledger.Ledger
	// A real key: the all-zero key is of small order, and with it the zero
	// signature verifies about one message in four.
	if err := l.Trust(signedtest.Public(signedtest.Old)); err != nil {
		t.Fatal(err)
	}
	r, err := l.CheckSigned("a", 5, make([]byte, 64))
	if err != nil || r.Accepted || r.Reason != ledger.ReasonBadSignature {
		t.Fatalf("zero signature: %+v, %v", r, err)
	}
	if hwm, _ := l.HighWater("a"); hwm != 0 {
		t.Fatalf("mark moved to %d", hwm)
	}
	if len(l.Marks()) != 0 {
		t.Fatalf("marks: %v", l.Marks())
	}
}

// The two-phase check guard.Guard runs around its lock: Recall leaves an
// unverified signature undone and moves nothing; Verified refuses a bad one
// unread and remembers a good one, which Recall then accepts, only until a
// key stops being trusted (the Verifier's generation moves).
func TestRecallAndVerified(t *testing.T) {
	v, _ := guard.NewVerifier(signedtest.Public(signedtest.Old), signedtest.Public(signedtest.New))
	var l ledger.Ledger
	l.UseVerifier(v)
	text := signedtest.Sign(t, signedtest.Old, "a", 5)
	raw, _ := guard.DecodeSignature(text)
	if _, done, err := l.Recall("a", 5, text, nil, false); done || err != nil {
		t.Fatalf("Recall before any verification: done %v, %v", done, err)
	}
	if _, done, err := l.Recall("", 5, text, nil, false); !done || !errors.Is(err, ledger.ErrInvalidResourceID) {
		t.Fatalf("Recall of an invalid id: done %v, %v", done, err)
	}
	if r := l.Verified("a", 5, raw[:], text, v.Generation(), ledger.Unsigned, false); r.Accepted || r.Reason != ledger.ReasonBadSignature {
		t.Fatalf("Verified(not ok) = %+v", r)
	}
	if len(l.Marks()) != 0 {
		t.Fatalf("a refused signature moved a mark: %v", l.Marks())
	}
	if r := l.Verified("a", 5, raw[:], text, v.Generation(), ledger.Exclusive, false); !r.Accepted {
		t.Fatalf("Verified(ok) = %+v", r)
	}
	if r, done, _ := l.Recall("a", 5, text, nil, false); !done || !r.Accepted {
		t.Fatalf("Recall of the remembered text: %+v, done %v", r, done)
	}
	if r, done, _ := l.Recall("a", 5, "", raw[:], false); !done || !r.Accepted {
		t.Fatalf("Recall of the remembered bytes: %+v, done %v", r, done)
	}
	if _, done, _ := l.Recall("a", 6, text, nil, false); done {
		t.Fatal("a remembered signature was lent to another token")
	}
	v.Distrust(signedtest.Public(signedtest.New)) // not the key that signed: the memory goes anyway
	if _, done, _ := l.Recall("a", 5, text, nil, false); done {
		t.Fatal("a verification outlived a change of the trusted keys")
	}
}

// A shared grant's signature (its message ends " shared") reads and never
// writes; an exclusive grant's does both; neither stands for the other's
// message. The refusal of a write moves no mark, remembered or not.
func TestSharedTokensRead(t *testing.T) {
	var l ledger.Ledger
	if err := l.Trust(signedtest.Public(signedtest.New)); err != nil {
		t.Fatal(err)
	}
	sigs, err := guard.SignGrants(signedtest.New, []string{"r", "r"}, []int64{5, 6}, []bool{true, false})
	if err != nil {
		t.Fatal(err)
	}
	shared, _ := guard.DecodeCarrier(sigs[0])
	exclusive, _ := guard.DecodeCarrier(sigs[1])
	single := ed25519.Sign(signedtest.New, guard.SharedMessage("r", 7))
	for i, c := range []struct {
		token  int64
		sig    []byte
		read   bool
		reason string
		mark   int64
	}{
		{5, shared, false, ledger.ReasonSharedToken, 0},
		{5, shared, true, "", 5},
		{5, shared, false, ledger.ReasonSharedToken, 5}, // remembered: still no write
		{6, shared, true, ledger.ReasonBadSignature, 5}, // another token
		{6, exclusive, true, "", 6},
		{6, exclusive, false, "", 6},
		{5, shared, true, ledger.ReasonStale, 6}, // the phase ended: a later writer wrote
		{7, single, false, ledger.ReasonSharedToken, 6},
		{7, single, true, "", 7},
	} {
		r, err := l.CheckSignedAccess("r", c.token, c.sig, c.read)
		if err != nil || r.Accepted != (c.reason == "") || r.Reason != c.reason {
			t.Fatalf("%d: token %d read=%v: %+v, %v; want reason %q", i, c.token, c.read, r, err, c.reason)
		}
		if hwm, _ := l.HighWater("r"); hwm != c.mark {
			t.Fatalf("%d: mark %d, want %d", i, hwm, c.mark)
		}
	}
}
