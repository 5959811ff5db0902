package wasm

import (
	"testing"

	"github.com/fenceview/fenceview/guard"
)

// FuzzABI drives guard.wasm through its raw exports with random ids,
// lengths and tokens, and a native guard.Guard with the same calls, and
// fails on the first answer that differs. State carries over between
// inputs, so sequences (accept, then stale) are explored too.
//
//	go test ./wasm -run '^$' -fuzz FuzzABI -fuzztime 30s
func FuzzABI(f *testing.F) {
	f.Add(uint8(0), []byte("res-1"), int8(0), int64(5))
	f.Add(uint8(0), []byte("res-1"), int8(0), int64(4))
	f.Add(uint8(1), []byte("res-1"), int8(0), int64(9))
	f.Add(uint8(2), []byte("заказ/42 🧾"), int8(0), int64(1))
	f.Add(uint8(3), []byte("h"), int8(0), int64(1<<63-1))
	f.Add(uint8(0), []byte(""), int8(0), int64(1))
	f.Add(uint8(0), []byte("a\xffb"), int8(0), int64(1))
	f.Add(uint8(0), []byte("ctl\x1f"), int8(0), int64(1))
	f.Add(uint8(0), []byte("ok"), int8(0), int64(0))
	f.Add(uint8(0), []byte("ok"), int8(0), int64(-1<<63))
	f.Add(uint8(0), []byte("ok"), int8(1), int64(3))
	f.Add(uint8(1), []byte("okay"), int8(-2), int64(3))
	f.Add(uint8(0), make([]byte, 161), int8(0), int64(3))

	a, _ := newABI(f)
	native := guard.New()
	f.Fuzz(func(t *testing.T, op uint8, id []byte, delta int8, token int64) {
		a.t = t
		// n is the length the host claims; delta makes it lie sometimes.
		n := int32(len(id)) + int32(delta)
		var ptr uint64
		if len(id) > 0 && len(id) <= 1<<20 {
			ptr = a.alloc(string(id))
			defer a.call("guard_free", ptr)
		}
		// What the guest must answer: lengths it refuses without reading
		// memory, ranges outside the buffer, else the native answer for
		// the bytes that are in range.
		var want int64
		bad := false
		switch {
		case n == 0 || n > guard.MaxResourceIDLen:
			want, bad = CodeInvalidResource, true
		case n < 0 || ptr == 0 || int(n) > len(id):
			want, bad = CodeBadMemory, true
		}
		s := string(id[:max(0, min(int(n), len(id)))])
		var got int64
		switch op % 4 {
		case 0:
			got = a.call("guard_check", ptr, i32(n), i64(token))
			if !bad {
				want = decisionOutcome(native.Check(s, token)).Code
			}
		case 1:
			got = a.call("guard_seed", ptr, i32(n), i64(token))
			if !bad {
				want = markOutcome(native.Seed(s, token)).Code
			}
		case 2:
			got = a.call("guard_high_water", ptr, i32(n))
			if !bad {
				want = markOutcome(native.HighWater(s)).Code
			}
		case 3:
			h := a.call("guard_handle", ptr, i32(n))
			if bad {
				got = h
				break
			}
			nh, err := native.Handle(s)
			if err != nil {
				want, got = codeOf(err), h
				break
			}
			if h <= 0 {
				t.Fatalf("guard_handle(%q) = %d, native handle %d", s, h, nh)
			}
			got = a.call("guard_check_handle", i32(int32(h)), i64(token))
			want = decisionOutcome(native.CheckHandle(nh, token)).Code
		}
		if got != want {
			t.Fatalf("op %d id %q len %d token %d: wasm %d, native %d", op%4, id, n, token, got, want)
		}
	})
}
