package wire

import (
	"errors"
	"testing"
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
