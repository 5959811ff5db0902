package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// comparable writes v with its times as RFC 3339 with nanoseconds and
// offset, so that two decodings compare by instant and offset (the
// locations of two parsed times are never the same pointer).
func comparable(v any) string {
	g, ok := v.(*Grant)
	if !ok {
		return fmt.Sprintf("%+v", v)
	}
	at := func(t Time) string { return time.Time(t).Format(time.RFC3339Nano) }
	c := *g
	c.ExpiresAt, c.Fencing.IssuedAt = Time{}, Time{}
	return fmt.Sprintf("%+v %s %s", c, at(g.ExpiresAt), at(g.Fencing.IssuedAt))
}

// checkAnswerBody decodes body into each answer type a client reads on
// the hot path, with DecodeBody and with encoding/json, and fails unless
// both give the same error or the same value.
func checkAnswerBody(t *testing.T, body []byte) {
	for _, mk := range []func() any{
		func() any { return new(Grant) },
		func() any { return new(Released) },
		func() any { return new(FenceAccepted) },
	} {
		fast, slow := mk(), mk()
		ferr := DecodeBody(body, fast)
		serr := json.Unmarshal(body, slow)
		if (ferr == nil) != (serr == nil) {
			t.Fatalf("%T %q: error %v, encoding/json %v", fast, body, ferr, serr)
		}
		if ferr == nil && comparable(fast) != comparable(slow) {
			t.Fatalf("%T %q:\n got %s\nwant %s", fast, body, comparable(fast), comparable(slow))
		}
	}
}

// Bodies as fenceview's server writes them: each must take the fast path.
var answerBodySeeds = []string{
	`{"resourceId":"orders/42","holder":"worker-1","holdCount":1,"expiresAt":"2026-11-30T12:00:30.000Z","leaseMs":30000,"fencing":{"token":12,"issuer":"fenceview-ab12","scope":"resource:orders/42","issuedAt":"2026-11-30T12:00:00.000Z"}}`,
	`{"resourceId":"r","holder":"h","holdCount":2,"expiresAt":"2026-11-30T12:00:30.000Z","leaseMs":1000,"fencing":{"token":3,"issuer":"i","scope":"resource:r","issuedAt":"2026-11-30T12:00:00.000Z","keyId":"k1","signature":"c2ln+/="}}`,
	`{"resourceId":"é/ü","holder":"世界","holdCount":1,"expiresAt":"2026-11-30T12:00:30.000+02:00","leaseMs":1,"fencing":{"token":922337203685477580,"issuer":"i","scope":"s","issuedAt":"2026-11-30T12:00:00.000Z"}}`,
	`{"holdCount":0,"released":true,"resourceId":"orders/42"}`,
	`{"holdCount":3,"released":true,"resourceId":"r"}`,
	`{"accepted":true,"idempotencyKey":"orders/42:12","token":12}`,
	`{}`,
}

// Bodies the fast readers leave to encoding/json, or that are not JSON.
var oddAnswerBodies = []string{
	`null`, ``, `{`, `[]`, `{"holdCount":1.5}`, `{"holdCount":1e3}`, `{"holdCount":"1"}`,
	`{"HoldCount":2}`, `{"holdcount":2,"holdCount":3}`, `{"holdCount":2,"holdCount":3}`,
	`{"holdCount":99999999999999999999}`, `{"holdCount":-0}`, `{"holdCount":01}`,
	`{"token":1,"idempotencyKey":"a\u0041"}`, `{"idempotencyKey":"\xff"}`, `{"idempotencyKey":null}`,
	`{"expiresAt":"not a time"}`, `{"expiresAt":null}`, `{"expiresAt":"2026-11-30T12:00:30Z","fencing":{"token":1},"fencing":{"issuer":"x"}}`,
	`{"fencing":{"ſcope":"x","Kid":"y","keyİd":"z"}}`, `{"fencing":null}`, `{"fencing":[]}`,
	`{"other":{"nested":1},"holdCount":1}`, `{"other":[1],"holdCount":1}`, `{"other":1.5,"holdCount":1}`,
	`{"holdCount":1} `, ` {"holdCount":1}`, `{"holdCount" :1}`, `{"holdCount":1,}`, `{"holdCount":1}x`,
	`{"other":"\x01"}`, `{"other":tru}`, `{"a":"b`, `{"released":1}`, `{"accepted":null}`, `{"Released":true,"released":false}`,
}

func TestAnswerBodyDecodesLikeEncodingJSON(t *testing.T) {
	for _, s := range append(append([]string{}, answerBodySeeds...), oddAnswerBodies...) {
		checkAnswerBody(t, []byte(s))
	}
	// The server's own shapes never need encoding/json.
	for _, s := range answerBodySeeds[:3] {
		if !new(Grant).decodePlain([]byte(s)) {
			t.Errorf("grant %s left to encoding/json", s)
		}
	}
	for _, s := range answerBodySeeds[3:5] {
		if !new(Released).decodePlain([]byte(s)) {
			t.Errorf("release %s left to encoding/json", s)
		}
	}
	if s := answerBodySeeds[5]; !new(FenceAccepted).decodePlain([]byte(s)) {
		t.Errorf("fence %s left to encoding/json", s)
	}
}

func FuzzAnswerBodyDecode(f *testing.F) {
	for _, s := range append(append([]string{}, answerBodySeeds...), oddAnswerBodies...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkAnswerBody(t, body) })
}

// validPlain never accepts what json.Valid refuses, and accepts the
// server's bodies.
func checkValidPlain(t *testing.T, b []byte) {
	if validPlain(b) && !json.Valid(b) {
		t.Fatalf("%q: accepted, but it is not JSON", b)
	}
}

func TestValidPlain(t *testing.T) {
	for _, s := range append(append([]string{}, answerBodySeeds...), oddAnswerBodies...) {
		checkValidPlain(t, []byte(s))
	}
	for _, s := range append(answerBodySeeds, `{"error":"held","holder":"a","expiresAt":null,"n":[1,{"a":[]}]}`, `[]`, `"x"`, `-1`) {
		if !validPlain([]byte(s)) {
			t.Errorf("%s left to json.Valid", s)
		}
	}
}

func FuzzValidPlain(f *testing.F) {
	for _, s := range append(append([]string{}, answerBodySeeds...), oddAnswerBodies...) {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"a":[1,[2,{"b":null}],true]}`))
	f.Fuzz(checkValidPlain)
}

var answerStrings = []string{"", "r", "order:42", `a"b\c`, "<script>&", "\x00\x01\b\f\n\r\t\x1f\x7f", "é ✓ 😀",
	"\xff\xfe", "a\u2028b\u2029c", "bad \xed\xa0\x80 surrogate", "\xf4\x90\x80\x80"}

// checkAnswers holds AppendBody to json.Marshal, byte for byte.
func checkAnswers(t *testing.T, s1, s2 string, n int64, sec int64) {
	at := Time(time.Unix(sec, n%1e9))
	if n%3 == 0 {
		at = Time{}
	}
	bodies := []any{
		Released{ResourceID: s1, HoldCount: int(n), Released: n%2 == 0},
		FenceAccepted{Accepted: n%2 == 1, IdempotencyKey: s2, Token: n},
		Grant{ResourceID: s1, Holder: s2, HoldCount: int(n), ExpiresAt: at, LeaseMs: -n,
			Fencing: Fencing{Token: n, Issuer: s2, Scope: s1, IssuedAt: at, KeyID: s2, Signature: s1}},
		Grant{ResourceID: s2, Holder: s1, Fencing: Fencing{IssuedAt: Time(time.Time(at).In(time.FixedZone("x", 3600)))}},
	}
	// Time writes times as they always were.
	want := "null"
	if !time.Time(at).IsZero() {
		want = `"` + FormatTime(time.Time(at)) + `"`
	}
	if got := string(at.appendJSON(nil)); got != want {
		t.Fatalf("time %v: %s, want %s", time.Time(at), got, want)
	}
	for _, v := range bodies {
		appendsAsJSON(t, v)
	}
	// Refusals' flat maps, written without reflection; anything else in
	// a map is left to encoding/json.
	for _, m := range []map[string]any{
		{"error": s1, "code": s2},
		{"error": s1, "code": "lock-held", "holder": s2, "expiresAt": at, "retryAfterMs": n, "permits": int(n), "ok": n%2 == 0, "none": nil},
		{s1: s2, s2: s1, "": n},
	} {
		appendsAsJSON(t, m)
	}
	for _, m := range []map[string]any{{"held": []string{s1}}, {"leader": map[string]any{"a": 1}}, {"f": 1.5}} {
		if got, ok := AppendBody([]byte("prefix"), m); ok || string(got) != "prefix" {
			t.Fatalf("%#v: written as %s, want it left to encoding/json", m, got)
		}
	}
	// What the map answers were, the structs stay.
	released, _ := json.Marshal(map[string]any{"resourceId": s1, "holdCount": int(n), "released": true})
	accepted, _ := json.Marshal(map[string]any{"accepted": true, "token": n, "idempotencyKey": s2})
	for v, want := range map[any][]byte{
		Released{ResourceID: s1, HoldCount: int(n), Released: true}: released,
		FenceAccepted{Accepted: true, Token: n, IdempotencyKey: s2}: accepted,
	} {
		if got, _ := json.Marshal(v); !bytes.Equal(got, want) {
			t.Fatalf("%#v: %s, the map answer was %s", v, got, want)
		}
	}
}

// appendsAsJSON holds AppendBody's writing of v, after a prefix, to
// json.Marshal's.
func appendsAsJSON(t *testing.T, v any) {
	t.Helper()
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := AppendBody([]byte("prefix"), v)
	if !ok || string(got) != "prefix"+string(want) {
		t.Fatalf("%#v:\n got %s\nwant %s", v, got, want)
	}
}

func TestAnswersEncodeLikeEncodingJSON(t *testing.T) {
	for i, s := range answerStrings {
		checkAnswers(t, s, answerStrings[(i+1)%len(answerStrings)], int64(i*7919-20000), int64(i)*1e9)
	}
	checkAnswers(t, "r", "h", 1<<62, 253402300799) // the year 9999
	if got, ok := AppendBody(nil, map[string]any{}); !ok || string(got) != "{}" {
		t.Fatalf("an empty map: %q, %v", got, ok)
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

// The nullable types read back what they write.
func TestNullablesRoundTrip(t *testing.T) {
	var l Lock
	if err := json.Unmarshal([]byte(`{"holder":null,"expiresAt":null,"availableAt":"2026-11-30T12:00:30.000Z"}`), &l); err != nil {
		t.Fatal(err)
	}
	if l.Holder != "" || !time.Time(l.ExpiresAt).IsZero() || time.Time(l.AvailableAt).UnixMilli() != 1796040030000 {
		t.Fatalf("decoded %+v", l)
	}
	b, _ := json.Marshal(Lock{Holder: "a"})
	var back Lock
	if err := json.Unmarshal(b, &back); err != nil || back.Holder != "a" {
		t.Fatalf("%s read back as %+v (%v)", b, back, err)
	}
}

// The codec against encoding/json on what both ends send and get:
//
//	go test ./internal/wire -run '^$' -bench . -benchmem
func BenchmarkGrantAnswer(b *testing.B) {
	at := Time(time.Date(2026, 11, 30, 12, 0, 0, 123e6, time.UTC))
	g := Grant{ResourceID: "bench-17", Holder: "client-a", HoldCount: 1, ExpiresAt: at, LeaseMs: 30000,
		Fencing: Fencing{Token: 123456, Issuer: "fenceview-0123456789abcdef", Scope: "resource:bench-17", IssuedAt: at,
			KeyID: "k1", Signature: "MEUCIQDx0c7xq1pC2v6eYzD0w4mT8hV3bX9l0k2aJfQm4v5p7wIgS0b3Yy8n1r9u6t2e4w8q0z7x5c3v1b9n7m5k3j1h2g0"}}
	b.Run("plain", func(b *testing.B) {
		buf := make([]byte, 0, 1024)
		for b.Loop() {
			buf, _ = AppendBody(buf[:0], g)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(g); err != nil {
				b.Fatal(err)
			}
		}
	})
	body, _ := AppendBody(nil, g)
	b.Run("decode-plain", func(b *testing.B) {
		for b.Loop() {
			var out Grant
			if err := DecodeBody(body, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode-encoding-json", func(b *testing.B) {
		for b.Loop() {
			var out Grant
			if err := json.Unmarshal(body, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkRequest(b *testing.B) {
	req := Request{ID: 123456, Op: OpAcquire, Resource: "bench-17", Holder: str("client-a"), LeaseMs: IntOf(30000)}
	line := AppendRequest(nil, &req)
	b.Run("encode", func(b *testing.B) {
		buf := make([]byte, 0, 256)
		for b.Loop() {
			buf = AppendRequest(buf[:0], &req)
		}
	})
	b.Run("decode", func(b *testing.B) {
		var out Request
		for b.Loop() {
			if err := DecodeRequest(line, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkAnswer(b *testing.B) {
	line := AppendAnswer(nil, 123456, 200, Released{Released: true, ResourceID: "bench-17"})
	b.Run("encode", func(b *testing.B) {
		buf := make([]byte, 0, 256)
		for b.Loop() {
			buf = AppendAnswer(buf[:0], 123456, 200, Released{Released: true, ResourceID: "bench-17"})
		}
	})
	b.Run("decode", func(b *testing.B) {
		var a Answer
		for b.Loop() {
			if err := DecodeAnswer(line, &a); err != nil {
				b.Fatal(err)
			}
		}
	})
}
