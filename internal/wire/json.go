package wire

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fenceview/fenceview/internal/jsonstr"
)

// The codec's primitives, one set for both directions. Readers take the
// plain shape fenceview's ends write (ASCII keys, strings without escapes,
// integers, JSON whitespace between tokens) and report false on anything
// else, which then goes to encoding/json from a zero value: the result is
// always encoding/json's, and the fuzz tests hold it so. Writers write
// what json.Marshal writes, byte for byte.

// reader reads a JSON text of the plain shape from b at i.
type reader struct {
	b []byte
	i int
}

// object reads the whole of b as one object, calling field with each key
// (the reader then at its value); field reads the value or reports false.
func (r *reader) object(field func(key []byte) bool) bool {
	if !r.objectValue(field) {
		return false
	}
	r.space()
	return r.i == len(r.b)
}

// objectValue reads one object at i, as object, leaving the reader after it.
func (r *reader) objectValue(field func(key []byte) bool) bool {
	r.space()
	return r.next('{') && r.items('}', func() bool {
		key, ok := r.key()
		if !ok {
			return false
		}
		r.space()
		if !r.next(':') {
			return false
		}
		r.space()
		return field(key)
	})
}

// items reads the items of an object or an array, the opening brace or
// bracket read, up to and including end: item reads each (the reader then
// at it) or reports false.
func (r *reader) items(end byte, item func() bool) bool {
	r.space()
	if r.next(end) {
		return true
	}
	for {
		r.space()
		if !item() {
			return false
		}
		r.space()
		switch {
		case r.next(','):
		case r.next(end):
			return true
		default:
			return false
		}
	}
}

func (r *reader) space() {
	for r.i < len(r.b) && isSpace(r.b[r.i]) {
		r.i++
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (r *reader) next(c byte) bool {
	if r.i < len(r.b) && r.b[r.i] == c {
		r.i++
		return true
	}
	return false
}

// key reads an object's key: printable ASCII without escapes, as
// encoding/json folds some non-ASCII letters (the Kelvin sign, the long s)
// into field names.
func (r *reader) key() ([]byte, bool) {
	if !r.next('"') {
		return nil, false
	}
	for j := r.i; j < len(r.b); j++ {
		switch c := r.b[j]; {
		case c == '"':
			s := r.b[r.i:j]
			r.i = j + 1
			return s, true
		case c < 0x20 || c == '\\' || c >= utf8.RuneSelf:
			return nil, false
		}
	}
	return nil, false
}

// str reads a string without escapes or control characters that is valid
// UTF-8: exactly the bytes encoding/json decodes it to.
func (r *reader) str() ([]byte, bool) {
	if !r.next('"') {
		return nil, false
	}
	ascii := true
	for j := r.i; j < len(r.b); j++ {
		switch c := r.b[j]; {
		case c == '"':
			s := r.b[r.i:j]
			r.i = j + 1
			return s, ascii || utf8.Valid(s)
		case c < 0x20 || c == '\\':
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// string reads a string (as str) into dst.
func (r *reader) string(dst *string) bool {
	s, ok := r.str()
	if ok {
		*dst = string(s)
	}
	return ok
}

// strings reads an array of strings (as str), never nil.
func (r *reader) strings(dst *[]string) bool {
	list := []string{}
	ok := r.next('[') && r.items(']', func() bool {
		s, ok := r.str()
		list = append(list, string(s))
		return ok
	})
	if ok {
		*dst = list
	}
	return ok
}

// digits reads the digits of a JSON integer (no leading zero), at most 18
// of them so that they cannot overflow; a longer number is left to
// encoding/json.
func (r *reader) digits() (uint64, bool) {
	b, j := r.b, r.i
	var v uint64
	for ; j < len(b) && b[j] >= '0' && b[j] <= '9'; j++ {
		v = v*10 + uint64(b[j]-'0')
	}
	n := j - r.i
	if n == 0 || n > 18 || (b[r.i] == '0' && n > 1) {
		return 0, false
	}
	r.i = j
	return v, true
}

// int reads a JSON integer, optionally negative, without fraction or
// exponent (what follows is checked by the caller: a ',' or a '}').
func (r *reader) int() (int64, bool) {
	neg := r.next('-')
	v, ok := r.digits()
	if !ok {
		return 0, false
	}
	if neg {
		return -int64(v), true
	}
	return int64(v), true
}

func (r *reader) int64(dst *int64) bool {
	v, ok := r.int()
	if ok {
		*dst = v
	}
	return ok
}

func (r *reader) intInto(dst *int) bool {
	v, ok := r.int()
	if ok {
		*dst = int(v)
	}
	return ok
}

func (r *reader) uint64(dst *uint64) bool {
	v, ok := r.digits()
	if ok {
		*dst = v
	}
	return ok
}

func (r *reader) bool(dst *bool) bool {
	switch {
	case r.lit("true"):
		*dst = true
	case r.lit("false"):
		*dst = false
	default:
		return false
	}
	return true
}

func (r *reader) lit(s string) bool {
	if len(r.b)-r.i < len(s) || string(r.b[r.i:r.i+len(s)]) != s {
		return false
	}
	r.i += len(s)
	return true
}

// time reads a time as time.Time's UnmarshalJSON does (what encoding/json
// calls), a string only: null is left to encoding/json.
func (r *reader) time(dst *Time) bool {
	start := r.i
	if _, ok := r.str(); !ok {
		return false
	}
	var t time.Time
	if t.UnmarshalJSON(r.b[start:r.i]) != nil {
		return false
	}
	*dst = Time(t)
	return true
}

// scalar passes over a plain string, an integer, true, false or null.
func (r *reader) scalar() bool {
	if r.i >= len(r.b) {
		return false
	}
	switch r.b[r.i] {
	case '"':
		_, ok := r.str()
		return ok
	case 't', 'f', 'n':
		return r.lit("true") || r.lit("false") || r.lit("null")
	}
	_, ok := r.int()
	return ok
}

// other passes over the value of a key the caller does not know, unless
// the key matches one of known but for case, which encoding/json would
// take for that field: that is left to encoding/json.
func (r *reader) other(key []byte, known []string) bool {
	for _, k := range known {
		if len(key) == len(k) && strings.EqualFold(string(key), k) {
			return false
		}
	}
	return r.scalar()
}

// value passes over one value of the plain shape, objects and arrays
// included (at most 32 deep).
func (r *reader) value(depth int) bool {
	if r.i >= len(r.b) || depth > 32 {
		return false
	}
	switch r.b[r.i] {
	case '{':
		return r.objectValue(func([]byte) bool { return r.value(depth + 1) })
	case '[':
		r.i++
		return r.items(']', func() bool { return r.value(depth + 1) })
	}
	return r.scalar()
}

// validPlain reports whether b is one JSON value of the plain shape,
// several times faster than json.Valid; false says nothing, json.Valid
// decides.
func validPlain(b []byte) bool {
	r := reader{b: b}
	if !r.value(0) {
		return false
	}
	r.space()
	return r.i == len(b)
}

// AppendString appends s quoted as encoding/json quotes it (see
// jsonstr.Append).
func AppendString(dst []byte, s string) []byte { return jsonstr.Append(dst, s) }
