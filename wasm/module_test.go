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

	"github.com/fenceview/fenceview/internal/modules"
	"github.com/fenceview/fenceview/wasm/internal/build"
)

// The committed modules must be what go generate builds from the current
// sources; otherwise the server and plugins would ship an old guard. The
// bytes depend on the Go release and on binaryen's wasm-opt, so the modules
// are rebuilt with the recorded release and compared byte for byte.
//
// When the go command here is another release, a developer's run skips
// (fetching a toolchain is not a test's business), but CI rebuilds with the
// recorded release, which the go command fetches through the module proxy:
// a Go upgrade in CI cannot blind the check. A wasm-opt other than the
// recorded one fails under CI: there is no pinned binaryen to fetch, so the
// modules must be regenerated with the one CI installs.
func TestModulesAreCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("rebuilding the modules takes a minute; skipped in -short")
	}
	ctx := context.Background()
	ci := os.Getenv("CI") != ""
	toolchain := build.Local
	local, err := build.GoVersion(ctx, ".")
	if err != nil {
		t.Fatal(err)
	}
	if local != GoVersion() {
		if !ci {
			t.Skipf("the modules were built by %s and this is %s, whose bytes differ; "+
				"run CI=true go test ./wasm -run TestModulesAreCurrent to check them with %s (fetched by the go command), "+
				"or regenerate them with this one (go generate ./wasm/...)",
				GoVersion(), local, GoVersion())
		}
		toolchain = GoVersion()
		got, err := build.GoVersionWith(ctx, toolchain, ".")
		if err != nil {
			t.Fatalf("the modules were built by %s and this is %s; fetching %s to check them: %v", GoVersion(), local, toolchain, err)
		}
		if got != toolchain {
			t.Fatalf("GOTOOLCHAIN=%s runs %s", toolchain, got)
		}
		t.Logf("the modules were built by %s and this is %s: rebuilding with %s", GoVersion(), local, toolchain)
	}
	opt, err := build.WasmOptVersion(ctx)
	if err != nil {
		if ci {
			t.Fatalf("CI needs binaryen to check the committed modules: %v", err)
		}
		t.Skipf("cannot check the committed modules: %v", err)
	}
	if want := modules.WasmOptVersion(); opt != want {
		if ci {
			t.Fatalf("the modules were optimised by %s and CI has %s: regenerate them with it (go generate ./wasm/...) and commit", want, opt)
		}
		t.Skipf("the modules were optimised by %s and this is %s; regenerate them with %s", want, opt, want)
	}
	for _, m := range build.Modules {
		out := filepath.Join(t.TempDir(), m.File)
		if err := build.BuildWith(ctx, toolchain, ".", m, out); err != nil {
			t.Fatal(err)
		}
		fresh, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(filepath.Join("..", "internal", "modules", m.File))
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
	cm := compiled(t, Bytes())
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
		// Signed tokens.
		"guard_trust_key":    {{i32, i32}, {i64}},
		"guard_check_signed": {{i32, i32, i64, i32, i32}, {i64}},
		// Extension: guard_check_signed by handle.
		"guard_check_signed_handle": {{i32, i64, i32, i32}, {i64}},
		// Reads (ABI version 3).
		"guard_check_signed_read":        {{i32, i32, i64, i32, i32}, {i64}},
		"guard_check_signed_read_handle": {{i32, i64, i32, i32}, {i64}},
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

// guard-http.wasm is an http-wasm handler: it imports the http_handler
// host functions (and WASI, which Go's runtime needs and http-wasm hosts
// provide) and exports handle_request and handle_response with the ABI's
// signatures, and its memory.
func TestHTTPModuleInterface(t *testing.T) {
	cm := compiled(t, HTTPBytes())
	handlerImports := 0
	for _, f := range cm.ImportedFunctions() {
		switch mod, name, _ := f.Import(); mod {
		case "http_handler":
			handlerImports++
		case "wasi_snapshot_preview1":
		default:
			t.Errorf("imports %s.%s", mod, name)
		}
	}
	if handlerImports == 0 {
		t.Error("imports nothing from http_handler")
	}
	if _, ok := cm.ExportedMemories()["memory"]; !ok {
		t.Error("does not export its memory as \"memory\"")
	}
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	for name, sig := range map[string][2][]api.ValueType{
		"_initialize":     {nil, nil},
		"handle_request":  {nil, {i64}},
		"handle_response": {{i32, i32}, nil},
	} {
		f, ok := cm.ExportedFunctions()[name]
		if !ok {
			t.Errorf("does not export %s", name)
			continue
		}
		if !slices.Equal(f.ParamTypes(), sig[0]) || !slices.Equal(f.ResultTypes(), sig[1]) {
			t.Errorf("%s: params %v results %v, want %v %v", name, f.ParamTypes(), f.ResultTypes(), sig[0], sig[1])
		}
	}
}

// compiled is module compiled by wazero's interpreter, for a look at its
// imports and exports.
func compiled(t *testing.T, module []byte) wazero.CompiledModule {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	t.Cleanup(func() { rt.Close(ctx) })
	cm, err := rt.CompileModule(ctx, module)
	if err != nil {
		t.Fatal(err)
	}
	return cm
}
