package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// FieldError is a field of a JSON body or request line that cannot be
// read as sent: Field is its path, keys joined by dots as encoding/json
// names a field ("holder", "decisions.source"; array indices left out).
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return fmt.Sprintf("field %q: %v", e.Field, e.Err) }
func (e *FieldError) Unwrap() error { return e.Err }

// ErrInvalidUTF8 refuses a string that is not valid UTF-8, raw or through
// an unpaired surrogate escape (\ud800): encoding/json reads either as
// U+FFFD, so "a\xffb" and "a\xfeb" would read as one holder.
var ErrInvalidUTF8 = errors.New("not valid UTF-8 (invalid bytes, or an unpaired \\u surrogate escape)")

// CheckText refuses, in the JSON text b, the first string (a key or a
// value) that is not valid UTF-8, and the first value at a path ints
// names (nil: none) that is neither a JSON integer Int reads nor null.
// b must be JSON that encoding/json has read (CheckText is strict about
// what it decoded, not a parser): its callers check it after decoding.
func CheckText(b []byte, ints func(path string) bool) error {
	if ints == nil && utf8.Valid(b) && !mayEscapeSurrogate(b) {
		return nil // the usual body: nothing to walk for
	}
	type frame struct {
		object bool
		key    []byte // the key of the value being read, in an object: as written, quoted
	}
	var stack []frame
	path := func() string {
		var keys []string
		for _, f := range stack {
			if f.object {
				var key string
				if json.Unmarshal(f.key, &key) != nil && len(f.key) >= 2 {
					key = string(f.key[1 : len(f.key)-1])
				}
				keys = append(keys, key)
			}
		}
		return strings.Join(keys, ".")
	}
	// notInt reports whether a value at the current path must be an
	// integer and the one starting at b[i:] (up to end) is not.
	notInt := func(i, end int) bool {
		if ints == nil || len(stack) == 0 || !stack[len(stack)-1].object || !ints(path()) {
			return false
		}
		lit := b[i:end]
		return string(lit) != "null" && (&Int{}).UnmarshalJSON(lit) != nil
	}
	wantKey := false
	for i := 0; i < len(b); {
		switch c := b[i]; c {
		case ' ', '\t', '\n', '\r', ':':
			i++
		case ',':
			wantKey = len(stack) > 0 && stack[len(stack)-1].object
			i++
		case '{', '[':
			if notInt(i, i+1) {
				return &FieldError{Field: path(), Err: ErrNotInteger}
			}
			stack = append(stack, frame{object: c == '{'})
			wantKey = c == '{'
			i++
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			wantKey = false
			i++
		case '"':
			end, valid := stringEnd(b, i)
			if wantKey && end-i >= 2 {
				stack[len(stack)-1].key = b[i:end]
				wantKey = false
			} else if notInt(i, end) {
				return &FieldError{Field: path(), Err: ErrNotInteger}
			}
			if !valid {
				return &FieldError{Field: path(), Err: ErrInvalidUTF8}
			}
			i = end
		default: // a number, true, false or null
			end := i
			for end < len(b) && !strings.ContainsRune(",]} \t\n\r", rune(b[end])) {
				end++
			}
			if notInt(i, end) {
				return &FieldError{Field: path(), Err: ErrNotInteger}
			}
			i = end
		}
	}
	return nil
}

// stringEnd reads the JSON string at b[i] (its opening quote) and returns
// the index after its closing quote, and whether it reads as valid UTF-8:
// its bytes, and the code points its \u escapes write (a surrogate must
// be a high one escaped just before a low one).
func stringEnd(b []byte, i int) (end int, valid bool) {
	valid = true
	for j := i + 1; j < len(b); {
		switch c := b[j]; {
		case c == '"':
			return j + 1, valid
		case c == '\\' && j+1 < len(b) && b[j+1] == 'u' && j+6 <= len(b):
			r := hex4(b[j+2:])
			j += 6
			if !utf16.IsSurrogate(r) {
				continue
			}
			if r >= 0xdc00 || j+6 > len(b) || b[j] != '\\' || b[j+1] != 'u' {
				valid = false
				continue
			}
			if lo := hex4(b[j+2:]); lo < 0xdc00 || lo > 0xdfff {
				valid = false
				continue
			}
			j += 6
		case c == '\\':
			j += 2
		case c < utf8.RuneSelf:
			j++
		default:
			r, size := utf8.DecodeRune(b[j:])
			if r == utf8.RuneError && size == 1 {
				valid = false
			}
			j += size
		}
	}
	return len(b), valid
}

// mayEscapeSurrogate reports whether b holds a \u escape of a surrogate
// (\ud800 to \udfff), or text that looks like one.
func mayEscapeSurrogate(b []byte) bool {
	for {
		i := bytes.Index(b, []byte(`\u`))
		if i < 0 || i+4 > len(b) {
			return false
		}
		if c, d := b[i+2]|0x20, b[i+3]|0x20; c == 'd' && d >= '8' && (d <= '9' || (d >= 'a' && d <= 'f')) {
			return true
		}
		b = b[i+2:]
	}
}

// hex4 reads the four hex digits of a \u escape the decoder has checked.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
