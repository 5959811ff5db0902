package httpapi

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/fenceview/fenceview"
)

var bodySeeds = []string{
	`{"holder":"client-a","leaseMs":30000,"waitMs":10000}`, `{"holder":"a"}`, `{"token":12}`,
	`{"token":12,"issuer":"fenceview-1","scope":"resource:r","holder":"h","source":"s","signature":"AAAA"}`,
	` { "holder" : "a" , "leaseMs" : 5 } ` + "\n", "{\r\n\t\"holder\":\"a\"\r\n}", `{}`, `{ }`, ``, ` `, "\v",
	`null`, ` null `, `[]`, `"x"`, `5`, `{"Holder":"a"}`, `{"HOLDER":"a"}`, "{\"holder\u017f\":\"a\"}", `{"holder":"a","holder":"b"}`,
	`{"holder":"a","holder":null}`, `{"leaseMs":5,"leaseMs":null}`, `{"holder":null}`, `{"holder":""}`, `{"holder":5}`,
	`{"holder":"\u00e9"}`, "{\"holder\":\"\xff\"}", "{\"holder\":\"é\"}", `{"holder":"a\"b"}`, "{\"holder\":\"a\tb\"}",
	`{"leaseMs":-0}`, `{"leaseMs":-}`, `{"leaseMs":01}`, `{"leaseMs":1.5}`, `{"leaseMs":1e3}`, `{"leaseMs":1E3}`,
	`{"leaseMs":"5"}`, `{"leaseMs":true}`, `{"leaseMs":[1]}`, `{"leaseMs":999999999999999999}`,
	`{"leaseMs":9223372036854775807}`, `{"leaseMs":9223372036854775808}`, `{"leaseMs":-9223372036854775808}`,
	`{"holder":"a",}`, `{"holder":"a"}x`, `{"holder":"a"}}`, `{"holder":"a"}]`, `{"holder":"a"} {}`, `{"holder":"a"`,
	`{"holder" "a"}`, `{"holder":"a" "x":1}`, `{,}`, `{"extra":{"a":[1,2]},"holder":"a"}`, `{"token":-3}`,
	`{"token":1,"issuer":null}`, `{"signature":"a","Signature":"b"}`, `{"origin":"x","header":"y"}`,
	`{"holder":"a","lockDelayMs":5000}`, `{"lockDelayMs":-1,"lockDelayMs":null}`, `{"lockDelayMs":1.5}`,
}

// checkBody holds decodeBody to encoding/json for lock and fence bodies:
// the same value, the same error or none.
func checkBody(t *testing.T, b []byte) {
	check := func(fast, slow any, allowEmpty bool) {
		ferr := decodeBody(b, fast, allowEmpty)
		serr := decodeBodyJSON(b, slow, allowEmpty)
		if (ferr == nil) != (serr == nil) || (ferr != nil && ferr.Error() != serr.Error()) {
			t.Fatalf("%q: error %v, encoding/json %v", b, ferr, serr)
		}
		if ferr == nil && !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: decoded %+v, encoding/json %+v", b, fast, slow)
		}
	}
	check(new(lockRequest), new(lockRequest), false)
	check(new(fenceRequest), new(fenceRequest), true)
}

// decodeBodyJSON is decodeBody with encoding/json's decoder alone, as it
// was before the plain path.
func decodeBodyJSON(b []byte, v any, allowEmpty bool) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return decodeBody(b, v, allowEmpty)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return errorOf(describeJSONError(err))
	}
	if dec.More() {
		return errorOf("data after the object")
	}
	return nil
}

func errorOf(msg string) error {
	return fenceview.Errorf(fenceview.EINVALID, "invalid JSON body: %s", msg)
}

func TestPlainBodiesDecodeLikeEncodingJSON(t *testing.T) {
	for _, s := range bodySeeds {
		checkBody(t, []byte(s))
	}
	// What clients send takes the plain path (else it would never be fast).
	var lr lockRequest
	var fr fenceRequest
	for _, s := range []string{bodySeeds[0], bodySeeds[1], bodySeeds[4], bodySeeds[5], `{"leaseMs":-0,"waitMs":0}`} {
		if !lr.decodePlain([]byte(s)) {
			t.Errorf("%s: missed the plain path", s)
		}
	}
	for _, s := range []string{bodySeeds[2], bodySeeds[3]} {
		if !fr.decodePlain([]byte(s)) {
			t.Errorf("%s: missed the plain path", s)
		}
	}
	// And what is not plain does not (encoding/json then decides).
	for _, s := range []string{`{"Holder":"a"}`, `{"holder":null}`, `{"holder":"\u00e9"}`, `{"leaseMs":1.0}`,
		`{"leaseMs":9223372036854775807}`, `{"holder":"a"}}`, `{"extra":1}`} {
		if lr.decodePlain([]byte(s)) {
			t.Errorf("%s: took the plain path", s)
		}
	}
}

func FuzzPlainBodies(f *testing.F) {
	for _, s := range bodySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkBody(t, b) })
}

// The plain path against encoding/json on what clients send:
//
//	go test ./internal/httpapi -run '^$' -bench LockBody -benchmem
func BenchmarkLockBody(b *testing.B) {
	body := []byte(bodySeeds[0])
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			var req lockRequest
			if err := decodeBody(body, &req, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var req lockRequest
			if err := decodeBodyJSON(body, &req, false); err != nil {
				b.Fatal(err)
			}
		}
	})
}
