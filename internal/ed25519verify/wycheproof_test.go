package ed25519verify

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
)

// WycheproofCase is one Ed25519 verification case of Wycheproof's file
// (testdata/wycheproof), with its group's key.
type wycheproofCase struct {
	ID      int
	Comment string
	Key     []byte
	Msg     []byte
	Sig     []byte
	Valid   bool
}

func wycheproofCases(t testing.TB) []wycheproofCase {
	t.Helper()
	b, err := os.ReadFile("testdata/wycheproof/ed25519_test.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		NumberOfTests int
		TestGroups    []struct {
			PublicKey struct{ PK string }
			Tests     []struct {
				TcID    int
				Comment string
				Msg     string
				Sig     string
				Result  string
			}
		}
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	unhex := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var cases []wycheproofCase
	for _, g := range file.TestGroups {
		for _, c := range g.Tests {
			if c.Result != "valid" && c.Result != "invalid" {
				t.Fatalf("case %d: result %q: neither valid nor invalid", c.TcID, c.Result)
			}
			cases = append(cases, wycheproofCase{c.TcID, c.Comment, unhex(g.PublicKey.PK), unhex(c.Msg), unhex(c.Sig), c.Result == "valid"})
		}
	}
	if len(cases) != file.NumberOfTests || len(cases) < 150 {
		t.Fatalf("read %d cases, the file says %d", len(cases), file.NumberOfTests)
	}
	return cases
}

func TestWycheproof(t *testing.T) {
	for _, c := range wycheproofCases(t) {
		if got := agree(t, c.Comment, c.Key, c.Msg, c.Sig); got != c.Valid {
			t.Errorf("case %d (%s): verified %v, Wycheproof says %v", c.ID, c.Comment, got, c.Valid)
		}
	}
}

// Encodings of y at or past the field's prime p = 2^255-19, with either sign
// bit, as a public key and as R, and small-order points as keys: the
// WebAssembly build's verifier must decode and compare them as
// crypto/ed25519 does.
func TestNonCanonicalEncodings(t *testing.T) {
	pub, msg, sig := signedByZeroKey("fenceview/v1 orders/42 7")
	for y := 0; y < 19; y++ {
		for _, sign := range []byte{0, 0x80} {
			enc := make([]byte, 32) // p + y, little-endian: 0xed+y, 0xff..., 0x7f
			enc[0] = byte(0xed + y)
			for i := 1; i < 31; i++ {
				enc[i] = 0xff
			}
			enc[31] = 0x7f | sign
			agree(t, "non-canonical key", enc, msg, sig)
			forged := append(append([]byte(nil), enc...), sig[32:]...)
			agree(t, "non-canonical R", pub, msg, forged)
			// The identity's canonical encoding, y = 1, is among the keys
			// with S = 0 and R = the identity: a small-order forgery.
			agree(t, "small-order key", enc, msg, append(append([]byte(nil), enc...), make([]byte, 32)...))
		}
	}
	identity := make([]byte, 32)
	identity[0] = 1
	agree(t, "identity key", identity, msg, append(append([]byte(nil), identity...), make([]byte, 32)...))
}
