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
	if n := reflect.TypeOf(rpcRequest{}).NumField(); n != 10 {
		t.Fatalf("rpcRequest has %d fields, appendRPCRequest writes 10: teach it the new ones", n)
	}
}
