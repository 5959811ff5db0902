package httpapi

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/wire"
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

var answerStrings = []string{"", "r", "order:42", `a"b\c`, "<script>&", "\x00\x01\b\f\n\r\t\x1f\x7f", "é ✓ 😀",
	"\xff\xfe", "a\u2028b\u2029c", "bad \xed\xa0\x80 surrogate", "\xf4\x90\x80\x80"}

// checkAnswers holds appendBody to json.Marshal, byte for byte.
func checkAnswers(t *testing.T, s1, s2 string, n int64, sec int64) {
	at := wireTime(time.Unix(sec, n%1e9))
	if n%3 == 0 {
		at = wireTime{}
	}
	bodies := []any{
		releasedBody{ResourceID: s1, HoldCount: int(n), Released: n%2 == 0},
		fenceAcceptedBody{Accepted: n%2 == 1, IdempotencyKey: s2, Token: n},
		grantBody{ResourceID: s1, Holder: s2, HoldCount: int(n), ExpiresAt: at, LeaseMs: -n,
			Fencing: fencingBody{Token: n, Issuer: s2, Scope: s1, IssuedAt: at, KeyID: s2, Signature: s1}},
		grantBody{ResourceID: s2, Holder: s1, Fencing: fencingBody{IssuedAt: wireTime(time.Time(at).In(time.FixedZone("x", 3600)))}},
		// The RPC stream marshals these answers with encoding/json: what
		// the map answers were, it stays.
	}
	// wireTime writes times as they always were (json.Marshal calls it).
	want := "null"
	if !time.Time(at).IsZero() {
		want = `"` + wire.FormatTime(time.Time(at)) + `"`
	}
	if got := string(at.appendJSON(nil)); got != want {
		t.Fatalf("time %v: %s, want %s", time.Time(at), got, want)
	}
	for _, v := range bodies {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendBody([]byte("prefix"), v)
		if !ok || string(got) != "prefix"+string(want) {
			t.Fatalf("%#v:\n got %s\nwant %s", v, got, want)
		}
	}
	released, _ := json.Marshal(map[string]any{"resourceId": s1, "holdCount": int(n), "released": true})
	accepted, _ := json.Marshal(map[string]any{"accepted": true, "token": n, "idempotencyKey": s2})
	for v, want := range map[any][]byte{
		releasedBody{ResourceID: s1, HoldCount: int(n), Released: true}: released,
		fenceAcceptedBody{Accepted: true, Token: n, IdempotencyKey: s2}: accepted,
	} {
		if got, _ := json.Marshal(v); !bytes.Equal(got, want) {
			t.Fatalf("%#v: %s, the map answer was %s", v, got, want)
		}
	}
}

func TestAnswersEncodeLikeEncodingJSON(t *testing.T) {
	for i, s := range answerStrings {
		checkAnswers(t, s, answerStrings[(i+1)%len(answerStrings)], int64(i*7919-20000), int64(i)*1e9)
	}
	checkAnswers(t, "r", "h", 1<<62, 253402300799) // the year 9999
	if _, ok := appendBody(nil, map[string]any{}); ok {
		t.Fatal("appendBody took a map")
	}
}

func FuzzAnswers(f *testing.F) {
	for i, s := range answerStrings {
		f.Add(s, answerStrings[(i+3)%len(answerStrings)], int64(i), int64(i)*86400)
	}
	f.Fuzz(func(t *testing.T, s1, s2 string, n, sec int64) {
		checkAnswers(t, s1, s2, n, sec)
	})
}

// The plain paths against encoding/json on what clients send and get:
//
//	go test ./httpapi -run '^$' -bench 'LockBody|GrantAnswer' -benchmem
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

func BenchmarkGrantAnswer(b *testing.B) {
	at := wireTime(time.Date(2026, 11, 30, 12, 0, 0, 123e6, time.UTC))
	g := grantBody{ResourceID: "bench-17", Holder: "client-a", HoldCount: 1, ExpiresAt: at, LeaseMs: 30000,
		Fencing: fencingBody{Token: 123456, Issuer: "fenceview-0123456789abcdef", Scope: "resource:bench-17", IssuedAt: at,
			KeyID: "k1", Signature: "MEUCIQDx0c7xq1pC2v6eYzD0w4mT8hV3bX9l0k2aJfQm4v5p7wIgS0b3Yy8n1r9u6t2e4w8q0z7x5c3v1b9n7m5k3j1h2g0"}}
	b.Run("plain", func(b *testing.B) {
		buf := make([]byte, 0, 1024)
		for b.Loop() {
			buf, _ = appendBody(buf[:0], g)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(g); err != nil {
				b.Fatal(err)
			}
		}
	})
}
