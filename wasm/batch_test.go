package wasm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fenceview/fenceview/guard"
)

// guard_check_batch, through the raw ABI: records are answered in place,
// in order, exactly as guard_check_handle answers them one by one, and bad
// memory or counts are refused without touching anything.
func TestABIBatch(t *testing.T) {
	a, _ := newABI(t)
	p := a.alloc("r")
	h := a.call("guard_handle", p, 1)
	other := a.call("guard_handle", a.alloc("s"), 1)
	type rec struct{ handle, token, wantCode, wantRequired int64 }
	recs := []rec{
		{h, 5, 0, 0}, {h, 5, 0, 5}, {h, 4, 5, 5}, {other, 1, 0, 0}, {h, 0, CodeInvalidToken, 0},
		{h + 100, 9, CodeUnknownHandle, 0}, {0, 9, CodeUnknownHandle, 0}, {h, 6, 0, 5}, {h, 5, 6, 6},
		{h, math.MaxInt64, 0, 6}, {other, -1, CodeInvalidToken, 0},
	}
	buf := a.call("guard_alloc", i32(int32(len(recs)*batchRecord)))
	mem := a.mod.Memory()
	for i, r := range recs {
		mem.WriteUint64Le(uint32(buf)+uint32(i*batchRecord), uint64(r.handle))
		mem.WriteUint64Le(uint32(buf)+uint32(i*batchRecord+8), uint64(r.token))
	}
	if n := a.call("guard_check_batch", uint64(buf), i32(int32(len(recs)))); n != int64(len(recs)) {
		t.Fatalf("guard_check_batch = %d", n)
	}
	for i, r := range recs {
		code, _ := mem.ReadUint64Le(uint32(buf) + uint32(i*batchRecord))
		req, _ := mem.ReadUint64Le(uint32(buf) + uint32(i*batchRecord+8))
		if int64(code) != r.wantCode || int64(req) != r.wantRequired {
			t.Errorf("record %d (handle %d, token %d) = %d, %d; want %d, %d", i, r.handle, r.token, int64(code), int64(req), r.wantCode, r.wantRequired)
		}
	}
	if v := a.call("guard_high_water", p, 1); v != math.MaxInt64 {
		t.Errorf("mark after the batch = %d", v)
	}
	// Counts and ranges outside one live buffer: -3, nothing read.
	for _, c := range []struct {
		ptr uint64
		n   int32
	}{{uint64(buf), -1}, {uint64(buf), math.MinInt32}, {uint64(buf), int32(len(recs) + 1)}, {uint64(buf) + 8, int32(len(recs))},
		{0, 1}, {1 << 31, 1}, {uint64(buf), 1<<20/batchRecord + 1}, {uint64(buf), math.MaxInt32}} {
		if v := a.call("guard_check_batch", c.ptr, i32(c.n)); v != CodeBadMemory {
			t.Errorf("guard_check_batch(%#x, %d) = %d, want %d", c.ptr, c.n, v, CodeBadMemory)
		}
	}
	if v := a.call("guard_check_batch", uint64(buf), 0); v != 0 {
		t.Errorf("an empty batch = %d", v)
	}
}

// CheckBatch gives, check for check, what CheckHandle gives one call at a
// time, on many resources over several instances and batches longer than
// one call carries.
func TestCheckBatchMatchesOneByOne(t *testing.T) {
	batched, single := newGuard(t, Config{Shards: 3}), newGuard(t, Config{Shards: 3})
	native := guard.New()
	r := rand.New(rand.NewPCG(5, 6))
	var hb, hs []Handle
	var hn []guard.Handle
	for i := 0; i < 40; i++ {
		id := fmt.Sprintf("res-%d", i)
		b, _ := batched.Handle(id)
		s, _ := single.Handle(id)
		n, _ := native.Handle(id)
		hb, hs, hn = append(hb, b), append(hs, s), append(hn, n)
	}
	for round := 0; round < 5; round++ {
		checks := make([]BatchCheck, 700) // several calls per instance
		for i := range checks {
			k := r.IntN(len(hb))
			checks[i] = BatchCheck{Handle: hb[k], Token: r.Int64N(300) - 5}
			if i%97 == 0 {
				checks[i].Handle = Handle{}
			}
		}
		if err := batched.CheckBatch(checks); err != nil {
			t.Fatal(err)
		}
		for i, c := range checks {
			k := -1
			for j := range hb {
				if hb[j] == c.Handle {
					k = j
				}
			}
			if k < 0 { // the zero Handle
				if c.Err == nil {
					t.Fatalf("check %d: the zero Handle was answered %+v", i, c.Decision)
				}
				continue
			}
			d, err := single.CheckHandle(hs[k], c.Token)
			nd, nerr := native.CheckHandle(hn[k], c.Token)
			if c.Decision != d || (c.Err == nil) != (err == nil) || d != nd || (err == nil) != (nerr == nil) {
				t.Fatalf("check %d (res-%d, %d): batch %+v %v, one by one %+v %v, native %+v %v", i, k, c.Token, c.Decision, c.Err, d, err, nd, nerr)
			}
		}
	}
}
