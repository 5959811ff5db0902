package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// encoding/json reads invalid UTF-8 as U+FFFD, so "a\xffb" and "a\xfeb"
// were one holder, and a non-integer leaseMs was refused without naming
// it. A request line is now refused naming the field at fault.
func TestRequestFieldsRefuseWhatEncodingJSONMangles(t *testing.T) {
	for line, want := range map[string]struct {
		field string
		err   error
	}{
		"{\"holder\":\"a\xffb\"}":                      {"holder", ErrInvalidUTF8},
		"{\"op\":\"acquire\",\"holder\":\"a\xfeb\"}":   {"holder", ErrInvalidUTF8},
		`{"holder":"a\ud800b"}`:                        {"holder", ErrInvalidUTF8},
		`{"holder":"a\udc00"}`:                         {"holder", ErrInvalidUTF8},
		`{"holder":"\ud800\u0041"}`:                    {"holder", ErrInvalidUTF8},
		`{"candidate":"\uDBFF"}`:                       {"candidate", ErrInvalidUTF8},
		"{\"resources\":[\"a\",\"b\xc0\"]}":            {"resources", ErrInvalidUTF8},
		"{\"resource\":\"r\",\"source\":\"s\xff\"}":    {"source", ErrInvalidUTF8},
		"{\"name\":\"\xed\xa0\x80\"}":                  {"name", ErrInvalidUTF8}, // a surrogate, UTF-8 encoded
		"{\"value\":\"v\xff\",\"holder\":\"h\xff\"}":   {"value", ErrInvalidUTF8},
		`{"leaseMs":1.5}`:                              {"leaseMs", ErrNotInteger},
		`{"holder":"h","leaseMs":"5000"}`:              {"leaseMs", ErrNotInteger},
		`{"waitMs":1e3}`:                               {"waitMs", ErrNotInteger},
		`{"token":true}`:                               {"token", ErrNotInteger},
		`{"permits":[1]}`:                              {"permits", ErrNotInteger},
		`{"slot":9223372036854775808}`:                 {"slot", ErrNotInteger},
		`{"id":1,"op":"fence","lockDelayMs":{"ms":1}}`: {"lockDelayMs", ErrNotInteger},
	} {
		var req Request
		_, _, err := DecodeRequestFields([]byte(line), &req)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != want.field || !errors.Is(err, want.err) {
			t.Errorf("%q: %v, want field %q: %v", line, err, want.field, want.err)
		}
	}
	for _, line := range []string{
		`{"holder":"\u00e9\ud83d\ude00"}`, `{"holder":"世界"}`, `{"holder":"\ufffd"}`, "{\"holder\":\"\xef\xbf\xbd\"}",
		`{"leaseMs":null,"token":-3}`, `{"resources":["a","\u00e9"]}`, `{"value":"\\ud800"}`,
	} {
		var req Request
		if _, _, err := DecodeRequestFields([]byte(line), &req); err != nil {
			t.Errorf("%s: %v", line, err)
		}
	}
}

// Bodies of other shapes (a report's decisions, a key's prefixes) are
// checked at any depth, named by their path.
func TestCheckTextNamesNestedFields(t *testing.T) {
	ints := func(path string) bool { return path == "decisions.token" || path == "floor" }
	for body, want := range map[string]string{
		"{\"decisions\":[{\"resourceId\":\"r\",\"source\":\"p\xff\"}]}": "decisions.source",
		`{"decisions":[{"token":1},{"token":"2"}]}`:                     "decisions.token",
		"{\"name\":\"k\",\"resources\":[\"orders/\",\"x\xff/\"]}":       "resources",
		`{"floor":2.5}`:                        "floor",
		"{\"a\":{\"b\":[{\"c\":[\"\xff\"]}]}}": "a.b.c",
	} {
		var fe *FieldError
		if err := CheckText([]byte(body), ints); !errors.As(err, &fe) || fe.Field != want {
			t.Errorf("%q: %v, want field %q", body, err, want)
		}
	}
	for _, body := range []string{`{"name":"\uDBFFx"}`, `{"name":"\udc00"}`, "{\"name\":\"\xff\"}"} {
		var fe *FieldError
		if err := CheckText([]byte(body), nil); !errors.As(err, &fe) || fe.Field != "name" {
			t.Errorf("%s: %v, want field name", body, err)
		}
	}
	for _, body := range []string{`{"decisions":[{"token":1,"required":1.5}]}`, `{"floor":null}`, `{"x":`, `[1,"\u00e9"]`} {
		if err := CheckText([]byte(body), ints); err != nil {
			t.Errorf("%q: %v", body, err)
		}
	}
}

// A report of 1,000 decisions, valid UTF-8 without escapes: the usual
// body, which CheckText looks through without walking it.
func BenchmarkCheckTextReport(b *testing.B) {
	benchmarkCheckTextReport(b, "orders/заказ-42", "]}")
}

// The same report walked token by token, as a body that is not valid
// UTF-8, or holds \u escapes of surrogates, is.
func BenchmarkCheckTextReportWalked(b *testing.B) {
	benchmarkCheckTextReport(b, `orders/\u00e9-42`, `],"x":"\ud83d\ude00"}`)
}

// benchmarkCheckTextReport checks a report of 1,000 decisions on
// resourceID, its decisions' list closed by end.
func benchmarkCheckTextReport(b *testing.B, resourceID, end string) {
	body := []byte(`{"decisions":[`)
	for i := range 1000 {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, `{"resourceId":"`+resourceID+`","token":18,"accepted":false,"required":19,"reason":"stale-token","source":"plugin/orders-db"}`...)
	}
	body = append(body, end...)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := CheckText(body, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// checkTextByTokens is CheckText walked the slow way, through
// encoding/json's tokens: the fuzz test's reference.
func checkTextByTokens(b []byte, ints func(path string) bool) error {
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
				if !validQuoted(raw) {
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
			if !validQuoted(raw) {
				return &FieldError{Field: path(), Err: ErrInvalidUTF8}
			}
		}
		if top != nil && top.object {
			top.wantKey = true
		}
	}
}

// validQuoted reports whether the JSON string that raw ends with (after
// any separator and space) is valid UTF-8 once read: its bytes, and the
// code points its \u escapes write.
func validQuoted(raw []byte) bool {
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

// CheckText refuses what the token walk refuses, naming the same field,
// on every body encoding/json decodes.
func FuzzCheckText(f *testing.F) {
	for _, s := range []string{
		"{\"holder\":\"a\xffb\"}", `{"a":{"b":[{"c":["\ud800"]}]}}`, `{"leaseMs":1.5,"x":"\udc00"}`,
		`{"decisions":[{"token":"1"},{"source":"\ud83d\ude00"}]}`, "{\"k\xff\":1}", `[1,"\u00e9",{"token":[]}]`,
		`{"token":null,"slot":-1,"permits":1e3}`, `{"\u0074oken":true}`,
	} {
		f.Add([]byte(s))
	}
	ints := func(path string) bool { return isIntField(path) || path == "decisions.token" || path == "a.b.c" }
	f.Fuzz(func(t *testing.T, b []byte) {
		var v any
		if json.Unmarshal(b, &v) != nil {
			return // CheckText reads only what encoding/json decoded
		}
		for _, in := range []func(string) bool{nil, ints} {
			got, want := CheckText(b, in), checkTextByTokens(b, in)
			var g, w *FieldError
			if (got == nil) != (want == nil) || (got != nil && (!errors.As(got, &g) || !errors.As(want, &w) || *g != *w)) {
				t.Fatalf("%q: %v, the token walk says %v", b, got, want)
			}
		}
	})
}
