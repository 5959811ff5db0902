package guard_test

import (
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/signedtest"
)

// ParseToken accepts exactly the positive decimal integers that fit in 63
// bits, written with digits only.
func FuzzParseToken(f *testing.F) {
	for _, s := range []string{"1", "0", "-1", "+1", " 1", "1.0", "1e3", "0x1", "9223372036854775807", "9223372036854775808", "00000000000000000001", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := guard.ParseToken(s)
		digits := s != ""
		for i := 0; i < len(s); i++ {
			digits = digits && s[i] >= '0' && s[i] <= '9'
		}
		ref, refErr := strconv.ParseInt(s, 10, 64)
		want := digits && len(s) <= 19 && refErr == nil && ref > 0
		if want != (err == nil) {
			t.Fatalf("ParseToken(%q) = %d, %v; want accepted=%v", s, got, err, want)
		}
		if err == nil && got != ref {
			t.Fatalf("ParseToken(%q) = %d, want %d", s, got, ref)
		}
		if err != nil && !errors.Is(err, guard.ErrInvalidToken) {
			t.Fatalf("ParseToken(%q) error %v is not ErrInvalidToken", s, err)
		}
	})
}

// Check never panics, refuses invalid input without recording it, and
// follows the rule on valid input.
func FuzzCheck(f *testing.F) {
	f.Add("r", int64(5), int64(3))
	f.Add("", int64(1), int64(1))
	f.Add("\xff", int64(1), int64(2))
	f.Fuzz(func(t *testing.T, id string, first, second int64) {
		g := guard.New()
		_, err1 := g.Check(id, first)
		d, err2 := g.Check(id, second)
		if guard.ValidateResourceID(id) != nil {
			if err1 == nil || err2 == nil || len(g.Marks()) != 0 {
				t.Fatalf("invalid id %q: %v, %v, marks %v", id, err1, err2, g.Marks())
			}
			return
		}
		if (err1 == nil) != (first > 0) || (err2 == nil) != (second > 0) {
			t.Fatalf("tokens %d, %d: errors %v, %v", first, second, err1, err2)
		}
		mark := int64(0)
		if err1 == nil {
			mark = first
		}
		if err2 != nil {
			if hw, _ := g.HighWater(id); hw != mark {
				t.Fatalf("an invalid token moved the mark to %d", hw)
			}
			return
		}
		if d.Accepted != (second >= mark) || d.Required != mark {
			t.Fatalf("first %d second %d: %+v", first, second, d)
		}
	})
}

// DecodeSignature accepts exactly the canonical texts of 64 bytes: what it
// accepts re-encodes to itself, and what it refuses is not such a text.
func FuzzDecodeSignature(f *testing.F) {
	good, _ := guard.Sign(signedtest.Old, "r", 1)
	for _, s := range []string{good, good + "==", good[:85], good + "A", good[:85] + "h", "", strings.Repeat("_", 86), good[:40] + "\n" + good[41:]} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		raw, err := guard.DecodeSignature(s)
		if err != nil {
			if !errors.Is(err, guard.ErrInvalidSignature) {
				t.Fatalf("error %v is not ErrInvalidSignature", err)
			}
			if b, e := base64.RawURLEncoding.DecodeString(s); e == nil && len(b) == 64 && base64.RawURLEncoding.EncodeToString(b) == s {
				t.Fatalf("refused the canonical text %q", s)
			}
			return
		}
		if guard.EncodeSignature(raw[:]) != s {
			t.Fatalf("accepted %q, which is not canonical", s)
		}
	})
}

// A guard in signed mode accepts a token only with the signature its key
// made for exactly that resource and token, and never moves a mark
// otherwise, whatever the bytes. Bits of mode send a call's signature as
// raw bytes instead of text, so the two forms share one memory of
// verifications.
func FuzzCheckSigned(f *testing.F) {
	good, _ := guard.Sign(signedtest.Old, "r", 5)
	goodRaw, _ := guard.DecodeSignature(good)
	f.Add("r", int64(5), good, int64(5), good, uint8(0))
	f.Add("r", int64(5), string(goodRaw[:]), int64(5), "", uint8(1))
	f.Add("r", int64(6), good, int64(5), good[:85], uint8(2))
	f.Add("", int64(5), good, int64(1), "", uint8(7))
	f.Fuzz(func(t *testing.T, id string, first int64, sig1 string, second int64, sig2 string, mode uint8) {
		v, _ := guard.NewVerifier(signedtest.Public(signedtest.Old))
		g := guard.NewSigned(v)
		mark := int64(0)
		for i, c := range []struct {
			tok int64
			sig string
		}{{first, sig1}, {second, sig2}, {first, sig1}} {
			raw := mode&(1<<i) != 0
			var d guard.Decision
			var err error
			if raw {
				d, err = g.CheckSignedBytes(id, c.tok, []byte(c.sig))
			} else {
				d, err = g.CheckSigned(id, c.tok, c.sig)
			}
			if guard.ValidateResourceID(id) != nil || c.tok <= 0 {
				if err == nil {
					t.Fatalf("invalid input %q %d accepted: %+v", id, c.tok, d)
				}
				continue
			}
			want, _ := guard.Sign(signedtest.Old, id, c.tok)
			if raw {
				w, _ := guard.DecodeSignature(want)
				want = string(w[:])
			}
			switch {
			case err != nil:
				t.Fatalf("valid input: %v", err)
			case c.sig != want:
				if d.Accepted || d.Reason != guard.ReasonBadSignature || d.Required != mark {
					t.Fatalf("signature %q (raw %v) for %q/%d: %+v", c.sig, raw, id, c.tok, d)
				}
			case d.Accepted != (c.tok >= mark):
				t.Fatalf("verified %d against mark %d: %+v", c.tok, mark, d)
			case d.Accepted:
				mark = c.tok
			}
			if hw, _ := g.HighWater(id); hw != mark {
				t.Fatalf("mark %d, want %d", hw, mark)
			}
		}
	})
}
