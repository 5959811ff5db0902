package issuer

import (
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/fenceview/fenceview"
)

// Bounds on reported fields. Reasons and sources land in metrics labels,
// the CSV export, the dashboard and the history's order, so each has a
// small charset that needs no escaping in any of them (each place still
// escapes by its own rules, for rows recorded before these checks).
const (
	// MaxClockSkew is how far in the future a reported "at" may be.
	MaxClockSkew = 5 * time.Minute
	// MaxReportAge is how far in the past a reported "at" may be: a guard
	// may hold reports through an outage, not forever. Older or newer
	// times would sit at either end of the history ("newest first") and
	// hide real rejections.
	MaxReportAge = 24 * time.Hour
)

// ValidateNewID refuses an id for a new resource or holder that cannot be
// told apart from another on screen: every Unicode Default_Ignorable_Code_Point
// (zero-width spaces and joiners, direction marks, variation selectors,
// the combining grapheme joiner, the Hangul fillers U+115F, U+1160, U+3164
// and U+FFA0, tag characters, the BOM, soft hyphens), every other format
// character, line and paragraph separators, spaces other than ASCII's, and
// U+2800 BRAILLE PATTERN BLANK, which Unicode does not call ignorable but
// every font draws as nothing. "shard-1\u200b" would otherwise sit next to
// "shard-1" in every list, and "\u202eshard" would print backwards. Ids
// already recorded are left as they are: they keep working, and every page
// escapes them.
func ValidateNewID(id string) error {
	for i, r := range id {
		if r == utf8.RuneError {
			continue // guard's checks refuse invalid UTF-8
		}
		if r <= unicode.MaxASCII {
			continue // ASCII controls are the guard's to refuse; the rest is visible
		}
		if isDefaultIgnorable(r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r) ||
			unicode.IsSpace(r) || r == brailleBlank { // U+0085 and U+00A0 are spaces too
			return fenceview.Errorf(fenceview.EINVALID, "invisible or direction-changing character %U at byte %d; ids must read as they compare", r, i)
		}
	}
	return nil
}

// brailleBlank is U+2800, a braille cell with no dot raised: a letter to
// Unicode, blank to every reader.
const brailleBlank = '\u2800'

// isDefaultIgnorable is Unicode's Default_Ignorable_Code_Point, derived as
// DerivedCoreProperties.txt defines it (Unicode 15.0.0, the edition of
// Go's unicode tables, unicode.Version), from the properties Go has:
//
//	Other_Default_Ignorable_Code_Point + Cf + Variation_Selector
//	- White_Space - FFF9..FFFB (interlinear annotation format characters)
//	- 13430..1343F (Egyptian hieroglyph format characters)
//	- Prepended_Concatenation_Mark (format characters meant to be seen)
//
// The Go package has no table of the derived property itself.
func isDefaultIgnorable(r rune) bool {
	if !unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Cf, unicode.Variation_Selector) {
		return false
	}
	return !unicode.Is(unicode.White_Space, r) && !(r >= 0xFFF9 && r <= 0xFFFB) &&
		!(r >= 0x13430 && r <= 0x1343F) && !unicode.Is(unicode.Prepended_Concatenation_Mark, r)
}

// checkAt bounds a reported decision time by the server's clock.
func checkAt(at, now time.Time) error {
	if at.After(now.Add(MaxClockSkew)) {
		return fenceview.Errorf(fenceview.EINVALID, "at is more than %v ahead of the server's clock", MaxClockSkew)
	}
	if at.Before(now.Add(-MaxReportAge)) {
		return fenceview.Errorf(fenceview.EINVALID, "at is more than %v in the past", MaxReportAge)
	}
	return nil
}
