package guard_test

import (
	"errors"
	"strconv"
	"testing"

	"github.com/fenceview/fenceview/guard"
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
