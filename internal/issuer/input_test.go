package issuer

import (
	"strings"
	"testing"
	"unicode"
)

// defaultIgnorable15 is Default_Ignorable_Code_Point as Unicode 15.0.0's
// DerivedCoreProperties.txt lists it, copied range by range: the oracle
// for the derivation in isDefaultIgnorable.
var defaultIgnorable15 = [][2]rune{
	{0x00AD, 0x00AD}, {0x034F, 0x034F}, {0x061C, 0x061C}, {0x115F, 0x1160},
	{0x17B4, 0x17B5}, {0x180B, 0x180F}, {0x200B, 0x200F}, {0x202A, 0x202E},
	{0x2060, 0x206F}, {0x3164, 0x3164}, {0xFE00, 0xFE0F}, {0xFEFF, 0xFEFF},
	{0xFFA0, 0xFFA0}, {0xFFF0, 0xFFF8}, {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A},
	{0xE0000, 0xE0FFF},
}

// The derivation from Go's tables is exactly Unicode's list, over every
// code point.
func TestDefaultIgnorableIsUnicodes(t *testing.T) {
	if unicode.Version != "15.0.0" {
		t.Logf("Go's unicode tables are %s; the oracle is 15.0.0", unicode.Version)
	}
	in := func(r rune) bool {
		for _, rg := range defaultIgnorable15 {
			if r >= rg[0] && r <= rg[1] {
				return true
			}
		}
		return false
	}
	n := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if got, want := isDefaultIgnorable(r), in(r); got != want {
			t.Errorf("isDefaultIgnorable(%U) = %v, Unicode says %v", r, got, want)
			if n++; n > 20 {
				t.FailNow()
			}
		}
	}
}

// New ids refuse every default-ignorable code point, the Hangul fillers,
// the braille blank and other invisible characters, wherever they stand;
// visible letters of any script, emoji and ASCII punctuation pass.
func TestValidateNewIDRefusesInvisibles(t *testing.T) {
	var refused []rune
	for _, rg := range defaultIgnorable15 {
		for r := rg[0]; r <= rg[1]; r++ {
			refused = append(refused, r)
		}
	}
	refused = append(refused,
		0x3164, 0x115F, 0x1160, 0xFFA0, // Hangul fillers (also default-ignorable)
		0xFE0F, 0x034F, 0x17B4, // the finding's others
		0x2800,                                         // braille blank: not default-ignorable, but blank
		0x0085, 0x00A0, 0x2007, 0x3000, 0x2028, 0x2029, // spaces and separators
		0xFFF9, 0x0600, 0x110BD, // format characters Unicode keeps visible: refused as before
	)
	for _, r := range refused {
		for _, id := range []string{string(r) + "shard", "shard" + string(r), "sh" + string(r) + "ard"} {
			if err := ValidateNewID(id); err == nil {
				t.Errorf("ValidateNewID(%q) with %U accepted", id, r)
			}
		}
	}
	for _, id := range []string{"shard-1", "inv:42/orders", "名前", "한글", "ᄀ", "Ελλάδα", "עברית", "العربية", "👍🏽", "⠁⠃", "~!@#$%^&*()_+`-={}[]|\\;':\",./<>?", "a b", strings.Repeat("x", 160)} {
		if err := ValidateNewID(id); err != nil {
			t.Errorf("ValidateNewID(%q) = %v, want accepted", id, err)
		}
	}
}
