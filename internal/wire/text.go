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
// What is not JSON is left to the decoder: CheckText then says nothing.
func CheckText(b []byte, ints func(path string) bool) error {
	if ints == nil && utf8.Valid(b) && !mayEscapeSurrogate(b) {
		return nil // the usual body: nothing to walk for
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	type frame struct {
		object  bool
		wantKey bool   // an object's next token is a key (or its end)
		key     string // the key of the value being read
	}
	var stack []frame
	path := func() string {
		var keys []string
		for _, f := range stack {
			if f.object {
				keys = append(keys, f.key)
			}
		}
		return strings.Join(keys, ".")
	}
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or not JSON: the decoder's to say
		}
		raw := b[start:dec.InputOffset()]
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if top != nil && top.object && top.wantKey {
			if key, ok := tok.(string); ok {
				top.key, top.wantKey = key, false
				if !validString(raw) {
					return &FieldError{Field: path(), Err: ErrInvalidUTF8}
				}
				continue
			}
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].object {
				stack[len(stack)-1].wantKey = true
			}
			continue
		}
		// A value, at path().
		if ints != nil && top != nil && top.object && ints(path()) {
			if n, ok := tok.(json.Number); tok != nil && (!ok || (&Int{}).UnmarshalJSON([]byte(n)) != nil) {
				return &FieldError{Field: path(), Err: ErrNotInteger}
			}
		}
		switch v := tok.(type) {
		case json.Delim: // '{' or '['
			stack = append(stack, frame{object: v == '{', wantKey: v == '{'})
			continue
		case string:
			if !validString(raw) {
				return &FieldError{Field: path(), Err: ErrInvalidUTF8}
			}
		}
		if top != nil && top.object {
			top.wantKey = true
		}
	}
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

// validString reports whether the JSON string that raw ends with (after
// any separator and space) is valid UTF-8 once read: its bytes, and the
// code points its \u escapes write.
func validString(raw []byte) bool {
	q := raw[bytes.IndexByte(raw, '"'):]
	if !utf8.Valid(q) {
		return false
	}
	for i := 1; i < len(q)-1; i++ {
		if q[i] != '\\' {
			continue
		}
		i++
		if q[i] != 'u' {
			continue
		}
		r := hex4(q[i+1:])
		i += 4
		if !utf16.IsSurrogate(r) {
			continue
		}
		// A high surrogate must be followed by a low one's escape.
		if r >= 0xdc00 || i+6 >= len(q) || q[i+1] != '\\' || q[i+2] != 'u' {
			return false
		}
		if lo := hex4(q[i+3:]); lo < 0xdc00 || lo > 0xdfff {
			return false
		}
		i += 6
	}
	return true
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
