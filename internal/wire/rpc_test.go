package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"
)

func str(s string) *string { return &s }

func checkRequestEncoding(t *testing.T, req Request) {
	t.Helper()
	got := AppendRequest([]byte("keep"), &req)
	want, err := json.Marshal(req)
	if err != nil || !bytes.Equal(got, append([]byte("keep"), want...)) {
		t.Fatalf("%+v:\n got %s\nwant %s (%v)", req, got, want, err)
	}
}

// A request line is byte for byte json.Marshal's.
func TestRequestEncodesLikeEncodingJSON(t *testing.T) {
	for _, req := range []Request{
		{},
		{ID: 1, Op: OpAcquire, Resource: "orders/42", Holder: str("worker-1"), LeaseMs: IntOf(30000), WaitMs: IntOf(0)},
		{ID: 1<<64 - 1, Op: OpFence, Resource: "r", Token: IntOf(-5), Issuer: "i", Scope: "s", Signature: "sig+/="},
		{ID: 2, Op: OpFence, Resource: "r", Token: IntOf(3), Mode: "current"},
		{ID: 3, Op: OpAcquire, Resource: "r", Holder: str("h"), LeaseMs: IntOf(1), WaitMs: IntOf(2), LockDelayMs: IntOf(60000)},
		{Op: OpFence, Mode: "<current>"},
		{Token: IntOf(1)},
		{Holder: str("a<b&c>")},
		{Holder: str("é")},
		{Holder: str("")},
		{Resource: "a\"b\\c\n"},
		{Holder: str("x"), Issuer: "\u2028"},
		{LeaseMs: Int{Set: true}, Source: "s", Name: "n", Permits: IntOf(4), Slot: Int{Set: true, Value: -1}},
		{Resources: &[]string{"a", "<b>"}, Candidate: str("c"), Value: str("")},
		{Resources: &[]string{}},
		{Resources: new([]string)},
	} {
		checkRequestEncoding(t, req)
	}
}

func FuzzRPCRequestEncode(f *testing.F) {
	f.Add(uint64(1), "acquire", "r/1", "h", int64(30000), int64(-1), int64(7), "iss", "sc", "sig")
	f.Add(uint64(0), "", "", "<>&\"\\\x00é", int64(0), int64(0), int64(0), "", "", "")
	f.Fuzz(func(t *testing.T, id uint64, op, res, holder string, lease, wait, token int64, iss, scope, sig string) {
		checkRequestEncoding(t, Request{ID: id, Op: op, Resource: res, Holder: &holder, LeaseMs: IntOf(lease), WaitMs: IntOf(wait),
			Token: Int{Set: token%2 == 0, Value: token}, Issuer: iss, Scope: scope, Signature: sig, Resources: &[]string{res, sig}, Value: &iss})
	})
}

var requestSeeds = []string{
	`{"id":7,"op":"acquire","resource":"r","holder":"a","leaseMs":30000,"waitMs":0}`,
	`{"id":8,"op":"fence","resource":"r","token":12,"issuer":"i","scope":"s","source":"x","signature":"AAA"}`,
	`{"id":9,"op":"fence","resource":"r","token":12,"mode":"current"}`,
	`{}`, `{ }`, `{"id":1}`, `{"ID":1,"Op":"lock"}`, `{"id":-1}`, `{"id":01}`, `{"id":1.5}`, `{"id":1e3}`,
	`{"id":18446744073709551615}`, `{"id":18446744073709551616}`, `{"token":-0}`, `{"token":-}`,
	`{"token":9223372036854775807}`, `{"token":9223372036854775808}`, `{"token":"5"}`, `{"token":null}`,
	`{"holder":null}`, `{"holder":""}`, `{"holder":"a","holder":"b"}`, `{"holder":"\u00e9"}`, "{\"holder\":\"\xff\"}",
	`{"holder":"a\"b"}`, `{"op":"acquire",}`, `{"op":"acquire"}x`, `{"op":"acquire"`, `[1]`, `"x"`, `{"extra":{"a":1},"id":3}`,
	`{"id":3,"op":1}`, `{"leaseMs":1,"waitMs":2,"token":3}`, "{\"op\":\"a\tb\"}",
	`{"id":10,"op":"semaphore-acquire","name":"jobs","holder":"w","permits":4,"waitMs":100,"lockDelayMs":5}`,
	`{"id":11,"op":"acquire-all","resources":["a","b"],"holder":"h"}`, `{"resources":[]}`, `{"resources":[ ]}`,
	`{"resources":["a",]}`, `{"resources":["a"],"resources":["b","c"]}`, `{"resources":null}`, `{"resources":[1]}`,
	`{"resources":"a"}`, `{"resources":["a"]`, `{"resources":["a","\u00e9"]}`,
	`{"id":12,"op":"campaign","name":"e","candidate":"c","value":"v","leaseMs":1}`, `{"value":""}`, `{"candidate":null}`,
	`{"slot":-1,"permits":1025}`, `{"name":3}`,
	` {"id":13, "op" : "renew" ,"holder":"é"} `, `{"holder":"世界","leaseMs":1 .5}`,
}

// The fast path decodes exactly as encoding/json: same request, same
// error or none.
func checkRequest(t *testing.T, line []byte) {
	var fast, slow Request
	ferr := DecodeRequest(line, &fast)
	serr := json.Unmarshal(line, &slow)
	if (ferr == nil) != (serr == nil) || (ferr != nil && ferr.Error() != serr.Error()) {
		t.Fatalf("%q: error %v, encoding/json %v", line, ferr, serr)
	}
	if ferr == nil && !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q: decoded %+v, encoding/json %+v", line, fast, slow)
	}
	if ferr != nil && fast.ID != slow.ID {
		t.Fatalf("%q: id %d on error, encoding/json %d", line, fast.ID, slow.ID)
	}
}

func TestRequestDecodesLikeEncodingJSON(t *testing.T) {
	for _, s := range requestSeeds {
		checkRequest(t, []byte(s))
	}
	var fast Request
	for _, s := range append(requestSeeds[:3:3], requestSeeds[34], requestSeeds[35], requestSeeds[len(requestSeeds)-2]) {
		if !fast.decodePlain([]byte(s)) {
			t.Errorf("a client's plain request missed the fast path: %s", s)
		}
	}
}

func FuzzRPCRequestDecode(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) { checkRequest(t, line); checkRequestFields(t, line) })
}

// DecodeRequestFields reads the request DecodeRequest reads, or refuses
// what CheckText refuses (a string that is not UTF-8), and the fast path
// names the keys encoding/json's scan names.
func checkRequestFields(t *testing.T, line []byte) {
	var withKeys, plain Request
	present, unknown, err := DecodeRequestFields(line, &withKeys)
	perr := DecodeRequest(line, &plain)
	strict := CheckText(line, nil)
	if perr == nil && strict != nil {
		var fe *FieldError
		if !errors.As(err, &fe) || !errors.Is(err, ErrInvalidUTF8) {
			t.Fatalf("%q: %v, want the field whose string is not UTF-8 (%v)", line, err, strict)
		}
		return
	}
	if (err == nil) != (perr == nil) || (err == nil && !reflect.DeepEqual(withKeys, plain)) {
		t.Fatalf("%q: %+v %v, DecodeRequest %+v %v", line, withKeys, err, plain, perr)
	}
	if err != nil {
		return
	}
	if sp, su := scanKeys(line); sp != present || su != unknown {
		t.Fatalf("%q: keys %v %q, encoding/json's %v %q", line, present.Names(), unknown, sp.Names(), su)
	}
}

func TestRequestFieldsNameTheKeys(t *testing.T) {
	for _, s := range requestSeeds {
		checkRequestFields(t, []byte(s))
	}
	for line, want := range map[string]struct {
		present []string
		unknown string
	}{
		`{"op":"acquire","holder":"a","leaseMs":5}`: {[]string{"op", "holder", "leaseMs"}, ""},
		`{"holder":"a","lease":5}`:                  {[]string{"holder"}, "lease"},
		`{"Holder":"a"}`:                            {nil, "Holder"},
		`{"x":{"holder":1},"y":2,"name":"n"}`:       {[]string{"name"}, "x"},
	} {
		var req Request
		present, unknown, _ := DecodeRequestFields([]byte(line), &req)
		if !reflect.DeepEqual(present.Names(), want.present) || unknown != want.unknown {
			t.Errorf("%s: %v %q, want %v %q", line, present.Names(), unknown, want.present, want.unknown)
		}
	}
}

// What a client writes, the server reads back as the same request.
func TestRequestRoundTrips(t *testing.T) {
	req := Request{ID: 5, Op: OpSemaphoreAcquire, Name: "jobs", Holder: str("w"), Permits: IntOf(4), LeaseMs: IntOf(1000),
		WaitMs: IntOf(10), LockDelayMs: IntOf(5), Slot: Int{Set: true}, Resources: &[]string{"a"}, Candidate: str("c"), Value: str("v"), Shared: true, Access: "read"}
	var got Request
	line := AppendRequest(nil, &req)
	if !got.decodePlain(line) || !reflect.DeepEqual(got, req) {
		t.Fatalf("%s read back as %+v", line, got)
	}
}

// A field added to Request must be taught to AppendRequest and to
// decodePlain.
func TestRequestCodecKnowsEveryField(t *testing.T) {
	if n := reflect.TypeOf(Request{}).NumField(); n != 21 {
		t.Fatalf("Request has %d fields, the codec knows 21: teach it the new ones", n)
	}
}

func checkAnswerDecoding(t *testing.T, line []byte) {
	var fast, slow Answer
	ferr := DecodeAnswer(line, &fast)
	serr := json.Unmarshal(line, &slow)
	if (ferr == nil) != (serr == nil) {
		t.Fatalf("%q: error %v, encoding/json %v", line, ferr, serr)
	}
	if ferr == nil && (fast.ID != slow.ID || fast.Status != slow.Status || !bytes.Equal(fast.Body, slow.Body)) {
		t.Fatalf("%q: decoded %d %d %s, encoding/json %d %d %s", line, fast.ID, fast.Status, fast.Body, slow.ID, slow.Status, slow.Body)
	}
}

var answerSeeds = []string{
	`{"id":7,"status":200,"body":{"token":12,"expiresAt":"2026-11-30T12:00:00.000Z"}}`,
	`{"id":8,"status":409,"body":{"error":"held","code":"conflict"}}`,
	`{"id":0,"status":400,"body":null}`,
	`{"id":01,"status":200,"body":1}`,
	`{"id":1,"status":200,"body":}`,
	`{"id":1,"status":200,"body":{}}}`,
	`{"id":1,"status":2000,"body":1}`,
	`{"status":200,"id":3,"body":"x"}`,
	`{"id":18446744073709551616,"status":200,"body":1}`,
	` {"id":1,"status":200,"body":1} `,
}

func TestAnswerDecodesLikeEncodingJSON(t *testing.T) {
	for _, s := range answerSeeds {
		checkAnswerDecoding(t, []byte(s))
	}
	var a Answer
	if !a.decodePlain([]byte(answerSeeds[0])) || !a.decodePlain(AppendAnswer(nil, 3, 200, Released{Released: true})) {
		t.Fatal("the server's answer missed the fast path")
	}
}

func FuzzRPCAnswerDecode(f *testing.F) {
	for _, s := range answerSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) { checkAnswerDecoding(t, line) })
}

// The answer line is byte for byte json.Marshal's.
func checkAnswerEncoding(t *testing.T, body any) {
	t.Helper()
	for _, status := range []int{200, 409} {
		want, err := json.Marshal(struct {
			ID     uint64 `json:"id"`
			Status int    `json:"status"`
			Body   any    `json:"body"`
		}{9, status, body})
		if err != nil {
			want = []byte(`{"id":9,"status":500,"body":{"error":"internal error"}}`)
		}
		if got := AppendAnswer([]byte("keep"), 9, status, body); !bytes.Equal(got, append([]byte("keep"), want...)) {
			t.Fatalf("body %#v:\n got %s\nwant %s", body, got, want)
		}
	}
}

func TestAnswerEncodesLikeEncodingJSON(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 123e6, time.UTC)
	for _, body := range []any{
		nil,
		map[string]any{"error": "invalid request: <x> & y", "code": "invalid"},
		Lock{ResourceID: "r/1", Locked: true, Holder: "a", HoldCount: 1, Token: 7, ExpiresAt: Time(now)},
		struct {
			T Time       `json:"t"`
			S NullString `json:"s"`
		}{Time(now), "a<b"},
		func() {}, // cannot be encoded: the internal-error answer
	} {
		checkAnswerEncoding(t, body)
	}
}

// The hot path's bodies, written without reflection, are byte for byte
// json.Marshal's.
func FuzzRPCAnswerEncode(f *testing.F) {
	f.Add("orders/42", "worker-1", 1, int64(30000), int64(12), "fenceview-ab", "resource:orders/42", "", "", int64(1796036586123), int64(0), true)
	f.Add("a<b", "é", -1, int64(-5), int64(-9), "\u2028", "x\"y", "k1", "c2ln+/=", int64(0), int64(-62135596800000), false)
	f.Add("\x7f", "\xff", 0, int64(0), int64(0), "&", "\\", "\x00", "\t", int64(253402300799999), int64(1<<62), false)
	f.Fuzz(func(t *testing.T, res, holder string, count int, lease, token int64, iss, scope, keyID, sig string, ms1, ms2 int64, flag bool) {
		expires := Time(time.UnixMilli(ms1))
		if ms1 == 0 {
			expires = Time{}
		}
		checkAnswerEncoding(t, Grant{ResourceID: res, Holder: holder, HoldCount: count, ExpiresAt: expires, LeaseMs: lease,
			Fencing: Fencing{Token: token, Issuer: iss, Scope: scope, IssuedAt: Time(time.UnixMilli(ms2)), KeyID: keyID, Signature: sig}})
		checkAnswerEncoding(t, Released{ResourceID: res, HoldCount: count, Released: flag})
		checkAnswerEncoding(t, FenceAccepted{Accepted: flag, Token: token, IdempotencyKey: iss})
		checkAnswerEncoding(t, map[string]any{"resourceId": res, "holdCount": count, "released": flag})
		checkAnswerEncoding(t, map[string]any{holder: res, iss: token, scope: flag, keyID: count, sig: ms1})
		checkAnswerEncoding(t, map[string]any{"error": res, "at": Time(time.UnixMilli(ms1))})
	})
}

// The answers of grants, releases, accepted fenced writes and plain errors
// do not need encoding/json.
func TestHotAnswersSkipReflection(t *testing.T) {
	now := Time(time.Date(2026, 11, 30, 12, 0, 0, 123e6, time.UTC))
	for _, body := range []any{
		Grant{ResourceID: "r/1", Holder: "a", HoldCount: 1, ExpiresAt: now, LeaseMs: 30000,
			Fencing: Fencing{Token: 7, Issuer: "fenceview-ab", Scope: "resource:r/1", IssuedAt: now, KeyID: "k", Signature: "c2ln"}},
		Released{ResourceID: "r/1", HoldCount: 0, Released: true},
		FenceAccepted{Accepted: true, Token: 7, IdempotencyKey: "r/1:7"},
		map[string]any{"error": "lock held by another holder", "code": "conflict", "holder": "a"},
	} {
		if _, ok := AppendBody(nil, body); !ok {
			t.Errorf("%#v goes through encoding/json", body)
		}
		checkAnswerEncoding(t, body)
	}
}
