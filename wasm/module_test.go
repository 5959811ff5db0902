package wasm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/fenceview/fenceview/wasm/internal/build"
	"github.com/fenceview/fenceview/wasm/modules"
)

// The committed modules must be what go generate builds from the current
// sources; otherwise the server and plugins would ship an old guard. The
// bytes depend on the Go release and on binaryen's wasm-opt, so the test
// compares only with the same tools (CI installs Debian's binaryen).
func TestModulesAreCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("rebuilding the modules takes a minute; skipped in -short")
	}
	ctx := context.Background()
	local, err := build.GoVersion(ctx, ".")
	if err != nil {
		t.Fatal(err)
	}
	if local != GoVersion() {
		t.Skipf("the modules were built by %s and this is %s, whose bytes differ; "+
			"run go generate ./wasm/... with %s to check them, or regenerate them with this one",
			GoVersion(), local, GoVersion())
	}
	opt, err := build.WasmOptVersion(ctx)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI needs binaryen to check the committed modules: %v", err)
		}
		t.Skipf("cannot check the committed modules: %v", err)
	}
	if want := modules.WasmOptVersion(); opt != want {
		t.Skipf("the modules were optimised by %s and this is %s; regenerate them with %s", want, opt, want)
	}
	for _, m := range build.Modules {
		out := filepath.Join(t.TempDir(), m.File)
		if err := build.Build(ctx, ".", m, out); err != nil {
			t.Fatal(err)
		}
		fresh, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(filepath.Join("modules", m.File))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fresh, committed) {
			t.Errorf("%s is stale (committed %d bytes, sources build %d): run go generate ./wasm/... and commit it",
				m.File, len(committed), len(fresh))
		}
	}
}

// Any WASI runtime must be able to host the guard: it may import nothing but
// wasi_snapshot_preview1, and must export the contract's functions with the
// contract's signatures.
func TestModuleInterface(t *testing.T) {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	cm, err := rt.CompileModule(ctx, Bytes())
	if err != nil {
		t.Fatal(err)
	}
	imports := cm.ImportedFunctions()
	if len(imports) == 0 {
		t.Fatal("no imports at all: not a WASI module?")
	}
	for _, f := range imports {
		if mod, name, _ := f.Import(); mod != "wasi_snapshot_preview1" {
			t.Errorf("imports %s.%s", mod, name)
		}
	}
	for _, m := range cm.ImportedMemories() {
		mod, name, _ := m.Import()
		t.Errorf("imports memory %s.%s", mod, name)
	}
	if _, ok := cm.ExportedMemories()["memory"]; !ok {
		t.Error("does not export its memory as \"memory\"")
	}
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	want := map[string][2][]api.ValueType{
		// The contract.
		"_initialize":      {nil, nil},
		"guard_alloc":      {{i32}, {i32}},
		"guard_free":       {{i32}, nil},
		"guard_check":      {{i32, i32, i64}, {i64}},
		"guard_high_water": {{i32, i32}, {i64}},
		"guard_seed":       {{i32, i32, i64}, {i64}},
		// Extensions (docs/wasm-abi.md).
		"guard_abi_version":       {nil, {i32}},
		"guard_last_required_ptr": {nil, {i32}},
		"guard_handle":            {{i32, i32}, {i32}},
		"guard_check_handle":      {{i32, i64}, {i64}},
		"guard_high_water_handle": {{i32}, {i64}},
		"guard_check_batch":       {{i32, i32}, {i32}},
		// Contract v2, signed tokens.
		"guard_trust_key":    {{i32, i32}, {i64}},
		"guard_check_signed": {{i32, i32, i64, i32, i32}, {i64}},
		// Extension: guard_check_signed by handle.
		"guard_check_signed_handle": {{i32, i64, i32, i32}, {i64}},
	}
	exports := cm.ExportedFunctions()
	for name, sig := range want {
		f, ok := exports[name]
		if !ok {
			t.Errorf("does not export %s", name)
			continue
		}
		if !slices.Equal(f.ParamTypes(), sig[0]) || !slices.Equal(f.ResultTypes(), sig[1]) {
			t.Errorf("%s: params %v results %v, want %v %v", name, f.ParamTypes(), f.ResultTypes(), sig[0], sig[1])
		}
	}
}

func TestETag(t *testing.T) {
	sum := sha256.Sum256(Bytes())
	if want := `"` + hex.EncodeToString(sum[:]) + `"`; ETag() != want {
		t.Fatalf("ETag = %s, want %s", ETag(), want)
	}
	if GoVersion() == "" {
		t.Fatal("no recorded Go version")
	}
}
