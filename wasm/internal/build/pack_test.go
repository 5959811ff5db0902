package build

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// A packed module must start with exactly the memory its segments
// describe: instantiate the module Go built and its packed form (which runs
// the unpacker), and compare every byte of memory before _initialize.
func TestPackGivesTheSameMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the guest")
	}
	ctx := context.Background()
	raw := filepath.Join(t.TempDir(), "guest.wasm")
	cmd := exec.CommandContext(ctx, "go", "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s -w", "-o", raw, Modules[0].Package)
	cmd.Env = env()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	orig, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	packed, err := Pack(orig)
	if err != nil {
		t.Fatal(err)
	}
	if len(packed) >= len(orig) {
		t.Fatalf("packed %d bytes, no smaller than %d", len(packed), len(orig))
	}
	t.Logf("%d bytes, packed %d", len(orig), len(packed))
	memory := func(module []byte) []byte {
		rt := wazero.NewRuntime(ctx)
		t.Cleanup(func() { rt.Close(ctx) })
		wasi_snapshot_preview1.MustInstantiate(ctx, rt)
		mod, err := rt.InstantiateWithConfig(ctx, module, wazero.NewModuleConfig().WithStartFunctions())
		if err != nil {
			t.Fatal(err)
		}
		mem, ok := mod.Memory().Read(0, mod.Memory().Size())
		if !ok {
			t.Fatal("cannot read memory")
		}
		return bytes.Clone(mem)
	}
	want, got := memory(orig), memory(packed)
	if len(want) != len(got) {
		t.Fatalf("memory of %d bytes, packed %d", len(want), len(got))
	}
	if i := firstDiff(want, got); i >= 0 {
		t.Fatalf("memory differs from byte %#x: %x, packed %x", i, want[i:min(i+16, len(want))], got[i:min(i+16, len(got))])
	}
	// And the packed module works: its exports are all there.
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	mod, err := rt.InstantiateWithConfig(ctx, packed, wazero.NewModuleConfig().WithStartFunctions("_initialize"))
	if err != nil {
		t.Fatal(err)
	}
	var stack [1]uint64
	if err := mod.ExportedFunction("guard_abi_version").CallWithStack(ctx, stack[:]); err != nil || api.DecodeI32(stack[0]) < 1 {
		t.Fatalf("guard_abi_version: %d, %v", stack[0], err)
	}
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

func TestPackRefuses(t *testing.T) {
	for name, m := range map[string][]byte{
		"empty":         nil,
		"not wasm":      []byte("\x7fELF\x02\x01\x01\x00"),
		"truncated":     []byte("\x00asm\x01\x00\x00\x00\x01\x05\x01"),
		"no sections":   []byte("\x00asm\x01\x00\x00\x00"),
		"start already": []byte("\x00asm\x01\x00\x00\x00\x08\x01\x00"),
	} {
		if _, err := Pack(m); err == nil {
			t.Errorf("%s: packed", name)
		}
	}
}

func TestLEB128(t *testing.T) {
	for _, v := range []uint32{0, 1, 127, 128, 300, 1<<21 - 1, 1 << 21, 1<<32 - 1} {
		r := reader{b: appendU32(nil, v)}
		if got := r.u32(); got != v || r.err != nil || r.i != len(r.b) {
			t.Errorf("u32 %d: got %d, %v", v, got, r.err)
		}
	}
	for _, v := range []int32{0, 1, -1, 63, 64, -64, -65, 1 << 20, -1 << 31, 1<<31 - 1} {
		r := reader{b: appendS32(nil, v)}
		if got := r.s32(); got != v || r.err != nil || r.i != len(r.b) {
			t.Errorf("s32 %d: got %d, %v", v, got, r.err)
		}
	}
}
