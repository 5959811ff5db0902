package wasm

import (
	"context"
	"math"
	"testing"

	"github.com/tetratelabs/wazero/api"
)

// abi calls the guard module's exports directly, as a host in another
// language would, on one instance of a Guard.
type abi struct {
	t   testing.TB
	mod api.Module
}

func newABI(t testing.TB) (*abi, *Guard) {
	t.Helper()
	ctx := context.Background()
	g, err := New(ctx, Config{Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(ctx) })
	return &abi{t: t, mod: g.shards[0].mod}, g
}

// call calls an export and returns its one result, sign-extended from its
// declared type; a trap fails the test.
func (a *abi) call(name string, params ...uint64) int64 {
	a.t.Helper()
	fn := a.mod.ExportedFunction(name)
	res, err := fn.Call(context.Background(), params...)
	if err != nil {
		a.t.Fatalf("%s%v trapped: %v", name, params, err)
	}
	if len(res) == 0 {
		return 0
	}
	if fn.Definition().ResultTypes()[0] == api.ValueTypeI32 {
		return int64(int32(uint32(res[0])))
	}
	return int64(res[0])
}

func (a *abi) alloc(s string) uint64 {
	a.t.Helper()
	p := uint64(uint32(a.call("guard_alloc", uint64(len(s)))))
	if p == 0 {
		a.t.Fatalf("guard_alloc(%d) = 0", len(s))
	}
	if !a.mod.Memory().WriteString(uint32(p), s) {
		a.t.Fatal("write outside memory")
	}
	return p
}

func i64(v int64) uint64 { return uint64(v) }
func i32(v int32) uint64 { return uint64(uint32(v)) }

func TestABIAllocBounds(t *testing.T) {
	a, _ := newABI(t)
	for _, size := range []int32{0, -1, math.MinInt32, 1<<20 + 1, math.MaxInt32} {
		if p := a.call("guard_alloc", i32(size)); p != 0 {
			t.Errorf("guard_alloc(%d) = %d, want 0", size, p)
		}
	}
	if p := a.call("guard_alloc", 1); p == 0 {
		t.Error("guard_alloc(1) = 0")
	}
	if v := a.call("guard_abi_version"); v != 3 {
		t.Errorf("guard_abi_version = %d", v)
	}
}

// Pointers and lengths outside a live guard_alloc buffer are refused with
// -3, never read, never a trap, and change nothing.
func TestABIBadMemory(t *testing.T) {
	a, g := newABI(t)
	p := a.alloc("res-1")
	if v := a.call("guard_check", p, 5, i64(7)); v != 0 {
		t.Fatalf("check res-1 7 = %d", v)
	}
	memSize := uint64(a.mod.Memory().Size())
	bad := []struct {
		name     string
		ptr, len uint64
	}{
		{"null", 0, 5},
		{"low memory", 8, 5},
		{"end of memory", memSize - 1, 5},
		{"past memory", memSize + 100, 5},
		{"top of address space", 0xFFFFFFFF, 5},
		{"negative length", p, i32(-1)},
		{"overruns buffer", p, 6},
		{"starts past buffer", p + 5, 1},
	}
	for _, c := range bad {
		for _, fn := range []string{"guard_check", "guard_seed"} {
			if v := a.call(fn, c.ptr, c.len, i64(100)); v != CodeBadMemory {
				t.Errorf("%s %s = %d, want %d", c.name, fn, v, CodeBadMemory)
			}
		}
		if v := a.call("guard_high_water", c.ptr, c.len); v != CodeBadMemory {
			t.Errorf("%s guard_high_water = %d, want %d", c.name, v, CodeBadMemory)
		}
		if v := a.call("guard_handle", c.ptr, c.len); v != CodeBadMemory {
			t.Errorf("%s guard_handle = %d, want %d", c.name, v, CodeBadMemory)
		}
	}
	// Lengths the guard refuses anyway are refused as ids, wherever they point.
	if v := a.call("guard_check", 0xFFFFFFFF, 161, i64(1)); v != CodeInvalidResource {
		t.Errorf("161 bytes at a bad pointer = %d, want %d", v, CodeInvalidResource)
	}
	// Inside a buffer is fine: "s-1" at p+2.
	if v := a.call("guard_check", p+2, 3, i64(4)); v != 0 {
		t.Errorf("check inside buffer = %d", v)
	}
	// After guard_free the buffer is gone.
	a.call("guard_free", p)
	if v := a.call("guard_check", p, 5, i64(100)); v != CodeBadMemory {
		t.Errorf("check after free = %d, want %d", v, CodeBadMemory)
	}
	a.call("guard_free", p)    // double free: nothing happens
	a.call("guard_free", 1234) // never allocated: nothing happens
	if hwm, _ := g.HighWater("res-1"); hwm != 7 {
		t.Fatalf("bad calls moved res-1 to %d", hwm)
	}
	if hwm, _ := g.HighWater("s-1"); hwm != 4 {
		t.Fatalf("s-1 = %d", hwm)
	}
}

func TestABIHandles(t *testing.T) {
	a, _ := newABI(t)
	p := a.alloc("h")
	h := a.call("guard_handle", p, 1)
	if h <= 0 {
		t.Fatalf("guard_handle = %d", h)
	}
	if v := a.call("guard_check_handle", i32(int32(h)), i64(5)); v != 0 {
		t.Fatalf("check_handle 5 = %d", v)
	}
	if v := a.call("guard_check", p, 1, i64(4)); v != 5 {
		t.Fatalf("check by name after handle = %d, want 5", v)
	}
	for _, bad := range []int32{0, -1, math.MinInt32, int32(h) + 1, math.MaxInt32} {
		if v := a.call("guard_check_handle", i32(bad), i64(9)); v != CodeUnknownHandle {
			t.Errorf("check_handle(%d) = %d, want %d", bad, v, CodeUnknownHandle)
		}
		if v := a.call("guard_high_water_handle", i32(bad)); v != CodeUnknownHandle {
			t.Errorf("high_water_handle(%d) = %d, want %d", bad, v, CodeUnknownHandle)
		}
	}
	if v := a.call("guard_check_handle", i32(int32(h)), i64(0)); v != CodeInvalidToken {
		t.Errorf("check_handle token 0 = %d", v)
	}
	if v := a.call("guard_high_water_handle", i32(int32(h))); v != 5 {
		t.Errorf("high_water_handle = %d, want 5", v)
	}
}

// An accepted check leaves the mark it was compared with in the cell
// guard_last_required_ptr points at.
func TestABILastRequired(t *testing.T) {
	a, _ := newABI(t)
	p := a.alloc("r")
	cell := uint32(a.call("guard_last_required_ptr"))
	read := func() int64 {
		v, ok := a.mod.Memory().ReadUint64Le(cell)
		if !ok {
			t.Fatal("cell outside memory")
		}
		return int64(v)
	}
	a.call("guard_check", p, 1, i64(3))
	if v := read(); v != 0 {
		t.Errorf("after first check cell = %d, want 0", v)
	}
	a.call("guard_check", p, 1, i64(8))
	if v := read(); v != 3 {
		t.Errorf("after second check cell = %d, want 3", v)
	}
}
