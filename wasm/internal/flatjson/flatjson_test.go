package flatjson

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// input is what the Extism guard reads; encoding/json decodes it into the
// same fields for comparison.
type input struct {
	ResourceID string          `json:"resourceId"`
	Token      int64           `json:"token"`
	Signature  string          `json:"signature"`
	Keys       json.RawMessage `json:"keys"`
}

func decodeInput(b []byte) (input, error) {
	var in input
	err := Decode(b, []Field{
		{Name: "resourceId", Str: &in.ResourceID},
		{Name: "token", Int: &in.Token},
		{Name: "signature", Str: &in.Signature},
		{Name: "keys", Raw: (*[]byte)(&in.Keys)},
	})
	return in, err
}

func (in input) same(o input) bool {
	return in.ResourceID == o.ResourceID && in.Token == o.Token && in.Signature == o.Signature &&
		string(in.Keys) == string(o.Keys) && (in.Keys == nil) == (o.Keys == nil)
}

// same fails unless Decode and encoding/json agree on b: both refuse it, or
// both accept it with the same fields (invalid UTF-8, which Decode refuses
// and encoding/json replaces, aside).
func same(t *testing.T, b []byte) {
	t.Helper()
	got, err := decodeInput(b)
	var want input
	jerr := json.Unmarshal(b, &want)
	if !utf8.Valid(b) {
		if err == nil {
			t.Fatalf("%q: invalid UTF-8 accepted", b)
		}
		return
	}
	switch {
	case (err == nil) != (jerr == nil):
		t.Fatalf("%q: Decode error %v, encoding/json error %v", b, err, jerr)
	case err == nil && !got.same(want):
		t.Fatalf("%q: Decode %+v, encoding/json %+v", b, got, want)
	}
}

var cases = []string{
	`{"resourceId":"a","token":5}`,
	` { "resourceId" : "orders/42" , "token" : 9223372036854775807 , "signature" : "AAA_-" } `,
	`{"token":-9223372036854775808}`, `{"token":9223372036854775808}`, `{"token":-9223372036854775809}`,
	`{"token":99999999999999999999}`, `{"token":-0}`, `{"token":0}`, `{"token":01}`, `{"token":1.0}`,
	`{"token":1e2}`, `{"token":1E+2}`, `{"token":-}`, `{"token":"5"}`, `{"token":true}`, `{"token":null}`,
	`{"token":[5]}`, `{"token":{}}`, `{"token":.5}`, `{"token":5.}`, `{"token":+5}`,
	`{"resourceId":null,"token":3}`, `{"resourceId":5}`, `{"resourceId":["a"]}`, `{"resourceId":"a","resourceId":"b"}`,
	`{"RESOURCEID":"x"}`, `{"resourceid":"x"}`, `{"Token":7}`, "{\"to\u212aen\":7}", "{\"re\u017fourceId\":\"x\"}",
	"{\"tok\u0117n\":7}", `{"resourceId":"\u00e9\ud83d\ude00\n\t\"\\\/\b\f\r"}`, `{"resourceId":"\ud800"}`,
	`{"resourceId":"\udc00x"}`, `{"resourceId":"\ud800\u0041"}`, `{"resourceId":"\ud800\ud800\udc00"}`,
	`{"resourceId":"\u00"}`, `{"resourceId":"\x"}`, "{\"resourceId\":\"a\x01\"}", `{"resourceId":"a`,
	`{"extra":[1,{"x":null,"y":[true,false,"s",-1.5e-3]}],"token":4}`, `{"extra":{}}`, `{"extra":[]}`,
	`{"extra":[1,]}`, `{"extra":{"a"}}`, `{"extra":{"a":1,}}`, `{"extra":tru}`, `{"extra":nul}`,
	`{}`, ` {} `, `{`, `}`, `[]`, `""`, `5`, `null`, ``, `{"a":1}x`, `{"a":1},`, `{,}`, `{"a" 1}`,
	`{"a":1 "b":2}`, `{'a':1}`, "{\"token\":5}\n", `{"token":5}{}`,
	`{"extra":` + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + `}`,
	`{"extra":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`,
	`{"extra":` + strings.Repeat(`{"a":`, 9999) + `1` + strings.Repeat("}", 9999) + `}`,
	"{\"resourceId\":\"a\xff\"}",
	`{"keys":{"issuer":"x","keys":[{"keyId":"k1","publicKey":"AA"}]}}`, `{"keys":null}`, `{"keys": [1, 2] }`,
	`{"keys":"s","keys":5}`, `{"keys":{"a":}}`,
	`{"keys":` + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + `}`,
	`{"keys":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`,
}

func TestArrayAndString(t *testing.T) {
	var got []string
	err := Array([]byte(` [ "POST" , "\u0050UT" ] `), func(e []byte) error {
		s, err := String(e)
		got = append(got, s)
		return err
	})
	if err != nil || len(got) != 2 || got[0] != "POST" || got[1] != "PUT" {
		t.Fatalf("%q, %v", got, err)
	}
	for _, bad := range []string{`["a",]`, `["a"`, `{}`, `"a"`, `[1]x`, `[`} {
		if err := Array([]byte(bad), func([]byte) error { return nil }); err == nil {
			t.Errorf("Array(%s) accepted", bad)
		}
	}
	if err := Array([]byte(`null`), func([]byte) error { t.Fatal("an element of null"); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{`5`, `"a`, `"a" "b"`, `null`} {
		if _, err := String([]byte(bad)); err == nil {
			t.Errorf("String(%s) accepted", bad)
		}
	}
	var s string
	if err := DecodeStrict([]byte(`{"a":"x","b":1}`), []Field{{Name: "a", Str: &s}}); err == nil || err.Error() != "b: unknown member" {
		t.Fatalf("DecodeStrict: %v", err)
	}
}

func TestDecodeAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range cases {
		same(t, []byte(c))
	}
}

func TestDecode(t *testing.T) {
	in, err := decodeInput([]byte(`{"resourceId":"orders/\u00e9","token":42,"signature":null,"x":[{}]}`))
	if err != nil || !in.same(input{ResourceID: "orders/é", Token: 42}) {
		t.Fatalf("%+v, %v", in, err)
	}
	if _, err := decodeInput([]byte(`{"token":"5"}`)); err == nil || err.Error() != "token: want an integer" {
		t.Fatalf("a string token: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, c := range cases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) { same(t, b) })
}
