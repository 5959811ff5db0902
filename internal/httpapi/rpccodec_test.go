package httpapi

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
)

var rpcRequestSeeds = []string{
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
}

// The fast path answers exactly as encoding/json: same request, same
// error or none.
func checkRPCRequest(t *testing.T, line []byte) {
	var fast, slow rpcRequest
	ferr := decodeRPCRequest(line, &fast)
	serr := json.Unmarshal(line, &slow)
	if (ferr == nil) != (serr == nil) || (ferr != nil && describeJSONError(ferr) != describeJSONError(serr)) {
		t.Fatalf("%q: error %v, encoding/json %v", line, ferr, serr)
	}
	if ferr == nil && !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q: decoded %+v, encoding/json %+v", line, fast, slow)
	}
	if ferr != nil && fast.ID != slow.ID {
		t.Fatalf("%q: id %d on error, encoding/json %d", line, fast.ID, slow.ID)
	}
}

func TestRPCRequestDecodesLikeEncodingJSON(t *testing.T) {
	for _, s := range rpcRequestSeeds {
		checkRPCRequest(t, []byte(s))
	}
	var fast rpcRequest
	if !fastRPCRequest([]byte(rpcRequestSeeds[0]), &fast) || !fastRPCRequest([]byte(rpcRequestSeeds[1]), &fast) {
		t.Fatal("a client's plain request missed the fast path")
	}
}

func FuzzRPCRequestDecode(f *testing.F) {
	for _, s := range rpcRequestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) { checkRPCRequest(t, line) })
}

// The answer line is byte for byte json.Marshal's.
func TestRPCAnswerEncodesLikeEncodingJSON(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 123e6, time.UTC)
	bodies := []any{
		nil,
		map[string]any{"error": "invalid request: <x> & y", "code": "invalid"},
		lockWire(fenceview.LockState{ResourceID: "r/1", Locked: true, Holder: "a", HoldCount: 1, LastToken: 7, ExpiresAt: now}),
		struct {
			T wireTime   `json:"t"`
			S wireString `json:"s"`
		}{wireTime(now), "a<b"},
		func() {}, // cannot be encoded: the internal-error answer
	}
	for _, body := range bodies {
		for _, status := range []int{200, 409} {
			want, err := json.Marshal(rpcAnswer{ID: 42, Status: status, Body: body})
			if err != nil {
				want, _ = json.Marshal(rpcAnswer{ID: 42, Status: 500, Body: map[string]any{"error": "internal error"}})
			}
			if got := appendRPCAnswer(nil, 42, status, body); !bytes.Equal(got, want) {
				t.Fatalf("body %#v:\n got %s\nwant %s", body, got, want)
			}
		}
	}
}

// A field added to rpcRequest still decodes (its key sends the line to
// encoding/json), but off the fast path: teach fastRPCRequest.
func TestRPCRequestCodecKnowsEveryField(t *testing.T) {
	if n := reflect.TypeOf(rpcRequest{}).NumField(); n != 19 {
		t.Fatalf("rpcRequest has %d fields, fastRPCRequest reads 19: teach it the new ones", n)
	}
}

func checkRPCAnswerEncoding(t *testing.T, body any) {
	t.Helper()
	want, err := json.Marshal(rpcAnswer{ID: 9, Status: 200, Body: body})
	if err != nil {
		want, _ = json.Marshal(rpcAnswer{ID: 9, Status: 500, Body: map[string]any{"error": "internal error"}})
	}
	if got := appendRPCAnswer([]byte("keep"), 9, 200, body); !bytes.Equal(got, append([]byte("keep"), want...)) {
		t.Fatalf("body %#v:\n got %s\nwant %s", body, got, want)
	}
}

// The hot path's bodies, written without reflection, are byte for byte
// json.Marshal's.
func FuzzRPCAnswerEncode(f *testing.F) {
	f.Add("orders/42", "worker-1", 1, int64(30000), int64(12), "fenceview-ab", "resource:orders/42", "", "", int64(1796036586123), int64(0), true)
	f.Add("a<b", "é", -1, int64(-5), int64(-9), "\u2028", "x\"y", "k1", "c2ln+/=", int64(0), int64(-62135596800000), false)
	f.Add("\x7f", "\xff", 0, int64(0), int64(0), "&", "\\", "\x00", "\t", int64(253402300799999), int64(1<<62), false)
	f.Fuzz(func(t *testing.T, res, holder string, count int, lease, token int64, iss, scope, keyID, sig string, ms1, ms2 int64, flag bool) {
		g := fenceview.Grant{ResourceID: res, Holder: holder, HoldCount: count, ExpiresAt: time.UnixMilli(ms1), LeaseMs: lease,
			Fencing: guard.Token{Token: token, Issuer: iss, Scope: scope, IssuedAt: time.UnixMilli(ms2), KeyID: keyID, Signature: sig}}
		if ms1 == 0 {
			g.ExpiresAt = time.Time{}
		}
		checkRPCAnswerEncoding(t, grantWire(g))
		checkRPCAnswerEncoding(t, releasedBody{ResourceID: res, HoldCount: count, Released: flag})
		checkRPCAnswerEncoding(t, fenceAcceptedBody{Accepted: flag, Token: token, IdempotencyKey: iss})
		checkRPCAnswerEncoding(t, map[string]any{"resourceId": res, "holdCount": count, "released": flag})
		checkRPCAnswerEncoding(t, map[string]any{holder: res, iss: token, scope: flag, keyID: count, sig: ms1})
		checkRPCAnswerEncoding(t, map[string]any{"error": res, "at": wireTime(time.UnixMilli(ms1))})
	})
}

// The answers of grants, releases, accepted fenced writes and plain errors
// do not need encoding/json.
func TestRPCHotAnswersSkipReflection(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 123e6, time.UTC)
	for _, body := range []any{
		grantWire(fenceview.Grant{ResourceID: "r/1", Holder: "a", HoldCount: 1, ExpiresAt: now, LeaseMs: 30000,
			Fencing: guard.Token{Token: 7, Issuer: "fenceview-ab", Scope: "resource:r/1", IssuedAt: now, KeyID: "k", Signature: "c2ln"}}),
		releasedBody{ResourceID: "r/1", HoldCount: 0, Released: true},
		fenceAcceptedBody{Accepted: true, Token: 7, IdempotencyKey: "r/1:7"},
		map[string]any{"error": "lock held by another holder", "code": "conflict", "holder": "a"},
	} {
		if _, ok := appendFastBody(nil, body); !ok {
			t.Errorf("%#v goes through encoding/json", body)
		}
		checkRPCAnswerEncoding(t, body)
	}
}
