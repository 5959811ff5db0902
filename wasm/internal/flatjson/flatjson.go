// Package flatjson reads one JSON object's string, integer and raw members
// with the decisions of encoding/json, for the WebAssembly modules, which
// cannot afford encoding/json: with the reflect, fmt and os it brings, the
// Extism module was 1.2 MB larger. Raw members (an object, an array) are
// read in turn with Decode, Array and String.
//
// What encoding/json accepts into a struct of string and int64 fields,
// Decode accepts with the same values; what it refuses, Decode refuses:
// keys match as encoding/json matches them (bytes.EqualFold), the last of
// duplicate keys wins, null leaves a field as it was, an integer field
// takes no fraction, exponent or overflow, escaped lone surrogates become
// U+FFFD, other members are checked and skipped, containers nest at most
// 10000 deep. Invalid UTF-8 is refused (encoding/json would replace it).
// FuzzDecode holds the two to this.
package flatjson

import (
	"errors"
	"unicode/utf8"
)

// A Field is a member Decode looks for; one of Str, Int and Raw is set.
type Field struct {
	Name string  // its key
	Str  *string // for a string member
	Int  *int64  // for an integer member
	Raw  *[]byte // for any value, kept as its JSON text (json.RawMessage; null is "null")
}

// maxDepth is encoding/json's bound on nesting.
const maxDepth = 10000

var (
	errSyntax   = errors.New("invalid JSON")
	errNotUTF8  = errors.New("input is not UTF-8")
	errDepth    = errors.New("JSON nested too deep")
	errNotStr   = errors.New("want a string")
	errNotInt   = errors.New("want an integer")
	errOverflow = errors.New("integer out of range")
	errUnknown  = errors.New("unknown member")
	errNotArray = errors.New("want an array")
)

// FieldError is an error about one member's value.
type FieldError struct {
	Name string
	Err  error
}

func (e *FieldError) Error() string { return e.Name + ": " + e.Err.Error() }

func (e *FieldError) Unwrap() error { return e.Err }

type decoder struct {
	b      []byte
	i      int
	strict bool // members no field names are errors
	depth  int  // of the object being decoded: Raw members nest below it
}

// Decode parses b, one JSON object (or null) with optional whitespace
// around it, and sets the fields its members name.
func Decode(b []byte, fields []Field) error {
	return decode(b, fields, false)
}

// DecodeStrict is Decode that refuses members no field names (a
// FieldError with the member's key).
func DecodeStrict(b []byte, fields []Field) error {
	return decode(b, fields, true)
}

func decode(b []byte, fields []Field, strict bool) error {
	if !utf8.Valid(b) {
		return errNotUTF8
	}
	d := decoder{b: b, strict: strict, depth: 1}
	d.ws()
	if d.literal("null") { // as encoding/json: nothing to set
		return d.end()
	}
	if !d.eat('{') {
		return errSyntax
	}
	return d.list('}', func() error {
		if !d.eat('"') {
			return errSyntax
		}
		key, err := d.str()
		if err != nil {
			return err
		}
		d.ws()
		if !d.eat(':') {
			return errSyntax
		}
		d.ws()
		return d.member(key, fields)
	})
}

// list reads the members or elements of the object or array whose opening
// delimiter was just read, each with one call of each, up to the closing
// delimiter; then the input must end.
func (d *decoder) list(closing byte, each func() error) error {
	d.ws()
	if !d.eat(closing) {
		for {
			d.ws()
			if err := each(); err != nil {
				return err
			}
			d.ws()
			if d.eat(closing) {
				break
			}
			if !d.eat(',') {
				return errSyntax
			}
		}
	}
	return d.end()
}

// end reads the whitespace after the value; nothing else may follow.
func (d *decoder) end() error {
	d.ws()
	if d.i != len(d.b) {
		return errSyntax
	}
	return nil
}

// member reads the value of key into the field it names, or skips it.
func (d *decoder) member(key []byte, fields []Field) error {
	var f *Field
	for i := range fields {
		if equalFold(key, fields[i].Name) {
			f = &fields[i]
			break
		}
	}
	switch {
	case f == nil && d.strict:
		return &FieldError{string(key), errUnknown}
	case f == nil:
		return d.skip()
	case f.Raw != nil:
		start := d.i
		if err := d.skip(); err != nil {
			return err
		}
		*f.Raw = d.b[start:d.i]
		return nil
	case d.literal("null"):
		return nil
	case f.Str != nil:
		if !d.eat('"') {
			return d.wrong(f.Name, errNotStr)
		}
		s, err := d.str()
		if err != nil {
			return err
		}
		*f.Str = string(s)
		return nil
	}
	start := d.i
	integer, err := d.number()
	if err != nil {
		return d.wrong(f.Name, errNotInt)
	}
	if !integer {
		return &FieldError{f.Name, errNotInt}
	}
	v, ok := parseInt(d.b[start:d.i])
	if !ok {
		return &FieldError{f.Name, errOverflow}
	}
	*f.Int = v
	return nil
}

// wrong is the error for a value of the wrong kind: a syntax error if it
// is not even JSON, as encoding/json reports it.
func (d *decoder) wrong(name string, err error) error {
	if serr := d.skip(); serr != nil {
		return serr
	}
	return &FieldError{name, err}
}

func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) eat(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *decoder) literal(s string) bool {
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

// str reads a string's contents after its opening quote and the closing
// quote, unescaped. Without escapes the result aliases the input.
func (d *decoder) str() ([]byte, error) {
	start := d.i
	var out []byte // nil until the first escape
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			if out != nil {
				return append(out, s...), nil
			}
			return s, nil
		case c < 0x20:
			return nil, errSyntax
		case c != '\\':
			d.i++
			continue
		}
		out = append(out, d.b[start:d.i]...)
		d.i++
		if d.i >= len(d.b) {
			return nil, errSyntax
		}
		e := d.b[d.i]
		d.i++
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := d.hex4()
			if !ok {
				return nil, errSyntax
			}
			if 0xd800 <= r && r < 0xe000 {
				// A surrogate: with a low one after it, one rune;
				// alone, U+FFFD (and what follows is read anew).
				if r < 0xdc00 && len(d.b)-d.i >= 6 && d.b[d.i] == '\\' && d.b[d.i+1] == 'u' {
					save := d.i
					d.i += 2
					if r2, ok := d.hex4(); ok && 0xdc00 <= r2 && r2 < 0xe000 {
						r = 0x10000 + (r-0xd800)<<10 + (r2 - 0xdc00)
						out = utf8.AppendRune(out, r)
						break
					}
					d.i = save
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, errSyntax
		}
		start = d.i
	}
	return nil, errSyntax
}

func (d *decoder) hex4() (rune, bool) {
	if len(d.b)-d.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range d.b[d.i : d.i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	d.i += 4
	return r, true
}

// number reads a number (RFC 8259's grammar) and reports whether it is an
// integer (no fraction, no exponent).
func (d *decoder) number() (integer bool, err error) {
	digits := func() int {
		n := 0
		for d.i < len(d.b) && '0' <= d.b[d.i] && d.b[d.i] <= '9' {
			d.i++
			n++
		}
		return n
	}
	d.eat('-')
	switch {
	case d.eat('0'):
	case digits() == 0:
		return false, errSyntax
	}
	integer = true
	if d.eat('.') {
		if digits() == 0 {
			return false, errSyntax
		}
		integer = false
	}
	if d.eat('e') || d.eat('E') {
		if !d.eat('+') {
			d.eat('-')
		}
		if digits() == 0 {
			return false, errSyntax
		}
		integer = false
	}
	return integer, nil
}

// parseInt parses an integer literal of the grammar into an int64.
func parseInt(s []byte) (int64, bool) {
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	var u uint64
	for _, c := range s {
		if u > (1<<63)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
		if u > 1<<63 {
			return 0, false
		}
	}
	if neg {
		return -int64(u), true // -(1<<63) wraps to itself: right
	}
	if u == 1<<63 {
		return 0, false
	}
	return int64(u), true
}

// skip reads one value of any kind, checking its syntax, without recursion:
// nesting is kept as a string of brackets.
func (d *decoder) skip() error {
	var open []byte
	for {
		d.ws()
		if d.i >= len(d.b) {
			return errSyntax
		}
		// A value.
		switch c := d.b[d.i]; {
		case c == '{' || c == '[':
			if d.depth+len(open)+1 > maxDepth {
				return errDepth
			}
			open = append(open, c)
			d.i++
			d.ws()
			if c == '{' && d.eat('}') || c == '[' && d.eat(']') {
				open = open[:len(open)-1]
				break
			}
			if c == '{' {
				if err := d.key(); err != nil {
					return err
				}
			}
			continue
		case c == '"':
			d.i++
			if _, err := d.str(); err != nil {
				return err
			}
		case c == '-' || '0' <= c && c <= '9':
			if _, err := d.number(); err != nil {
				return err
			}
		case d.literal("true") || d.literal("false") || d.literal("null"):
		default:
			return errSyntax
		}
		// After a value: the end of containers, or the next element.
		for {
			if len(open) == 0 {
				return nil
			}
			d.ws()
			top := open[len(open)-1]
			if d.eat(',') {
				if top == '{' {
					d.ws()
					if err := d.key(); err != nil {
						return err
					}
				}
				break
			}
			if top == '{' && d.eat('}') || top == '[' && d.eat(']') {
				open = open[:len(open)-1]
				continue
			}
			return errSyntax
		}
	}
}

// Array calls each with the JSON text of every element of b, a JSON array
// (or null, which has none).
func Array(b []byte, each func(elem []byte) error) error {
	if !utf8.Valid(b) {
		return errNotUTF8
	}
	d := decoder{b: b, depth: 1}
	d.ws()
	if d.literal("null") {
		return d.end()
	}
	if !d.eat('[') {
		return errNotArray
	}
	return d.list(']', func() error {
		start := d.i
		if err := d.skip(); err != nil {
			return err
		}
		return each(d.b[start:d.i])
	})
}

// String returns the string b, a JSON string, holds.
func String(b []byte) (string, error) {
	if !utf8.Valid(b) {
		return "", errNotUTF8
	}
	d := decoder{b: b}
	d.ws()
	if !d.eat('"') {
		return "", errNotStr
	}
	s, err := d.str()
	if err != nil {
		return "", err
	}
	if err := d.end(); err != nil {
		return "", err
	}
	return string(s), nil
}

// key reads a member's key and its colon.
func (d *decoder) key() error {
	if !d.eat('"') {
		return errSyntax
	}
	if _, err := d.str(); err != nil {
		return err
	}
	d.ws()
	if !d.eat(':') {
		return errSyntax
	}
	return nil
}

// equalFold is bytes.EqualFold for a key and a name of ASCII letters (the
// Fields'), without the Unicode tables: the only other runes that fold to
// ASCII letters are KELVIN SIGN (k) and LATIN SMALL LETTER LONG S (s).
func equalFold(key []byte, name string) bool {
	j := 0
	for i := 0; i < len(key); {
		if j >= len(name) {
			return false
		}
		c := key[i]
		want := name[j] | 0x20 // lower case
		switch {
		case c < utf8.RuneSelf:
			if c|0x20 != want || !('a' <= want && want <= 'z') && c != name[j] {
				return false
			}
			i++
		default:
			r, n := utf8.DecodeRune(key[i:])
			if !(r == '\u212a' && want == 'k' || r == '\u017f' && want == 's') {
				return false
			}
			i += n
		}
		j++
	}
	return j == len(name)
}
