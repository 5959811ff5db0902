package client

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

func checkRPCRequestEncoding(t *testing.T, req rpcRequest) {
	got, err := appendRPCRequest([]byte("keep"), &req)
	want, werr := json.Marshal(req)
	if err != nil || werr != nil || !bytes.Equal(got, append([]byte("keep"), want...)) {
		t.Fatalf("%+v:\n got %s (%v)\nwant %s (%v)", req, got, err, want, werr)
	}
}

// A request line is byte for byte json.Marshal's.
func TestRPCRequestEncodesLikeEncodingJSON(t *testing.T) {
	for _, req := range []rpcRequest{
		{},
		{ID: 1, Op: "acquire", Resource: "orders/42", Holder: "worker-1", LeaseMs: 30000, WaitMs: 0},
		{ID: 1<<64 - 1, Op: "fence", Resource: "r", Token: -5, Issuer: "i", Scope: "s", Signature: "sig+/="},
		{ID: 2, Op: "fence", Resource: "r", Token: 3, Mode: "current"},
		{ID: 3, Op: "acquire", Resource: "r", Holder: "h", LeaseMs: 1, WaitMs: 2, LockDelayMs: 60000},
		{Op: "fence", Mode: "<current>"},
		{Token: 1},
		{Holder: "a<b&c>"},
		{Holder: "é"},
		{Resource: "a\"b\\c\n"},
		{Holder: "x", Issuer: "\u2028"},
	} {
		checkRPCRequestEncoding(t, req)
	}
}

func FuzzRPCRequestEncode(f *testing.F) {
	f.Add(uint64(1), "acquire", "r/1", "h", int64(30000), int64(-1), int64(7), "iss", "sc", "sig")
	f.Add(uint64(0), "", "", "<>&\"\\\x00é", int64(0), int64(0), int64(0), "", "", "")
	f.Fuzz(func(t *testing.T, id uint64, op, res, holder string, lease, wait, token int64, iss, scope, sig string) {
		checkRPCRequestEncoding(t, rpcRequest{ID: id, Op: op, Resource: res, Holder: holder, LeaseMs: lease, WaitMs: wait, Token: token, Issuer: iss, Scope: scope, Signature: sig})
	})
}

func checkRPCAnswerDecoding(t *testing.T, line []byte) {
	var fast, slow rpcAnswer
	ferr := decodeRPCAnswer(line, &fast)
	serr := json.Unmarshal(line, &slow)
	if (ferr == nil) != (serr == nil) {
		t.Fatalf("%q: error %v, encoding/json %v", line, ferr, serr)
	}
	if ferr == nil && (fast.ID != slow.ID || fast.Status != slow.Status || !bytes.Equal(fast.Body, slow.Body)) {
		t.Fatalf("%q: decoded %d %d %s, encoding/json %d %d %s", line, fast.ID, fast.Status, fast.Body, slow.ID, slow.Status, slow.Body)
	}
}

var rpcAnswerSeeds = []string{
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

func TestRPCAnswerDecodesLikeEncodingJSON(t *testing.T) {
	for _, s := range rpcAnswerSeeds {
		checkRPCAnswerDecoding(t, []byte(s))
	}
}

func FuzzRPCAnswerDecode(f *testing.F) {
	for _, s := range rpcAnswerSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) { checkRPCAnswerDecoding(t, line) })
}

// A field added to rpcRequest must be taught to appendRPCRequest.
func TestRPCRequestCodecKnowsEveryField(t *testing.T) {
	if n := reflect.TypeOf(rpcRequest{}).NumField(); n != 12 {
		t.Fatalf("rpcRequest has %d fields, appendRPCRequest writes 12: teach it the new ones", n)
	}
}

// checkAnswerBody decodes body into each answer type the client reads
// over the RPC stream, with the fast readers and with encoding/json, and
// fails unless both give the same error or the same value.
func checkAnswerBody(t *testing.T, body []byte) {
	for _, mk := range []func() any{
		func() any { return new(grantBody) },
		func() any { return new(releaseBody) },
		func() any { return new(fencedBody) },
	} {
		fast, slow := mk(), mk()
		ferr := decodeAnswerBody(body, fast)
		serr := json.Unmarshal(body, slow)
		if (ferr == nil) != (serr == nil) {
			t.Fatalf("%T %q: error %v, encoding/json %v", fast, body, ferr, serr)
		}
		if ferr != nil {
			continue
		}
		// Marshalled, times compare by instant and offset.
		fb, _ := json.Marshal(fast)
		sb, _ := json.Marshal(slow)
		if !bytes.Equal(fb, sb) {
			t.Fatalf("%T %q:\n got %s\nwant %s", fast, body, fb, sb)
		}
	}
}

// Bodies as fenceview's server writes them: each must take the fast path.
var answerBodySeeds = []string{
	`{"resourceId":"orders/42","holder":"worker-1","holdCount":1,"expiresAt":"2026-11-30T12:00:30.000Z","leaseMs":30000,"fencing":{"token":12,"issuer":"fenceview-ab12","scope":"resource:orders/42","issuedAt":"2026-11-30T12:00:00.000Z"}}`,
	`{"resourceId":"r","holder":"h","holdCount":2,"expiresAt":"2026-11-30T12:00:30.000Z","leaseMs":1000,"fencing":{"token":3,"issuer":"i","scope":"resource:r","issuedAt":"2026-11-30T12:00:00.000Z","keyId":"k1","signature":"c2ln+/="}}`,
	`{"resourceId":"é/ü","holder":"世界","holdCount":1,"expiresAt":"2026-11-30T12:00:30.000+02:00","leaseMs":1,"fencing":{"token":9223372036854775807,"issuer":"i","scope":"s","issuedAt":"2026-11-30T12:00:00.000Z"}}`,
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
	`{"other":"\x01"}`, `{"other":tru}`, `{"a":"b`,
}

func TestAnswerBodyDecodesLikeEncodingJSON(t *testing.T) {
	for _, s := range append(append([]string{}, answerBodySeeds...), oddAnswerBodies...) {
		checkAnswerBody(t, []byte(s))
	}
	// The server's own shapes never need encoding/json.
	for _, s := range answerBodySeeds[:3] {
		if !fastGrant([]byte(s), new(grantBody)) {
			t.Errorf("grant %s left to encoding/json", s)
		}
	}
	for _, s := range answerBodySeeds[3:5] {
		if !fastRelease([]byte(s), new(releaseBody)) {
			t.Errorf("release %s left to encoding/json", s)
		}
	}
	if s := answerBodySeeds[5]; !fastFenced([]byte(s), new(fencedBody)) {
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
