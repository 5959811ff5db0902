// Package build builds the guard modules (guard.wasm, guard-extism.wasm,
// guard-http.wasm) from their guest packages, the same way for go generate
// and for the test that checks the committed modules are current.
//
// A module is built in three steps, all pinned so that any checkout with the
// same tools builds the same bytes: go build (GOOS=wasip1, c-shared,
// -trimpath, -s -w); binaryen's wasm-opt -Oz, which shrinks Go's code by
// about 7% (Debian's package binaryen); and Pack, which stores Go's static
// data compactly (docs/wasm-abi.md has the numbers).
package build

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// A Module is one committed .wasm file and the package it is built from.
type Module struct {
	File    string // in the internal/modules directory
	Package string
}

// Modules are the modules go generate writes.
var Modules = []Module{
	{File: "guard.wasm", Package: "github.com/fenceview/fenceview/wasm/internal/guest"},
	{File: "guard-extism.wasm", Package: "github.com/fenceview/fenceview/wasm/internal/extism"},
	{File: "guard-http.wasm", Package: "github.com/fenceview/fenceview/wasm/internal/httpguest"},
}

// Local, as a toolchain, is the go command on PATH as it is: the one go
// generate runs.
const Local = "local"

// env pins everything but the Go version that changes the output bytes:
// the target, no cgo, no stray GOFLAGS or GOWASM features, and the
// toolchain (no switching to another behind our back).
func env() []string { return envWith(Local) }

func envWith(toolchain string) []string {
	return append(os.Environ(),
		"GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0",
		"GOFLAGS=", "GOWASM=", "GOEXPERIMENT=", "GOTOOLCHAIN="+toolchain,
	)
}

// wasmOptFlags: -Oz for size; the features are the ones Go's output
// already uses (and every WebAssembly 2.0 host has), so wasm-opt may keep
// them but adds none.
var wasmOptFlags = []string{
	"-Oz",
	"--enable-sign-ext", "--enable-nontrapping-float-to-int",
	"--enable-bulk-memory", "--enable-mutable-globals",
}

// Build builds m into the file out with the go command on PATH. dir is any
// directory inside the module.
func Build(ctx context.Context, dir string, m Module, out string) error {
	return BuildWith(ctx, Local, dir, m, out)
}

// BuildWith builds m with the given toolchain, a GOTOOLCHAIN value: Local,
// or a release such as "go1.26.8", which the go command fetches through the
// module proxy (checked against the checksum database) the first time.
func BuildWith(ctx context.Context, toolchain, dir string, m Module, out string) error {
	tmp, err := os.MkdirTemp("", "fenceview-wasm-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	raw := filepath.Join(tmp, "go.wasm")
	// -trimpath and -buildvcs=false keep paths and VCS state out of the
	// bytes; -s -w drop the symbol table and DWARF (the runtime keeps what
	// it needs for tracebacks).
	cmd := exec.CommandContext(ctx, "go", "build",
		"-buildmode=c-shared", "-trimpath", "-buildvcs=false", "-ldflags=-s -w",
		"-o", raw, m.Package)
	cmd.Dir = dir
	cmd.Env = envWith(toolchain)
	if err := run(cmd); err != nil {
		return fmt.Errorf("building %s: %v", m.Package, err)
	}
	opt, err := WasmOpt()
	if err != nil {
		return err
	}
	optimized := filepath.Join(tmp, "opt.wasm")
	cmd = exec.CommandContext(ctx, opt, append(append([]string{}, wasmOptFlags...), raw, "-o", optimized)...)
	if err := run(cmd); err != nil {
		return fmt.Errorf("wasm-opt %s: %v", m.File, err)
	}
	b, err := os.ReadFile(optimized)
	if err != nil {
		return err
	}
	if b, err = Pack(b); err != nil {
		return fmt.Errorf("%s: %v", m.File, err)
	}
	return os.WriteFile(out, b, 0o644)
}

func run(cmd *exec.Cmd) error {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%v\n%s", err, stderr.String())
	}
	return nil
}

// WasmOpt returns the path of binaryen's wasm-opt, or an error that says
// how to install it.
func WasmOpt() (string, error) {
	p, err := exec.LookPath("wasm-opt")
	if err != nil {
		return "", fmt.Errorf("wasm-opt not found (apt-get install binaryen): %w", err)
	}
	return p, nil
}

// GoVersion is the version of the go command that Build runs, e.g. "go1.26.8".
func GoVersion(ctx context.Context, dir string) (string, error) {
	return GoVersionWith(ctx, Local, dir)
}

// GoVersionWith is the version of the go command that BuildWith runs with
// toolchain.
func GoVersionWith(ctx context.Context, toolchain, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "env", "GOVERSION")
	cmd.Dir = dir
	cmd.Env = envWith(toolchain)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		return "", fmt.Errorf("GOTOOLCHAIN=%s go env GOVERSION: %v\n%s", toolchain, err, stderr)
	}
	return strings.TrimSpace(string(out)), nil
}

// WasmOptVersion is the version wasm-opt reports, e.g. "wasm-opt version 108".
// Another binaryen release may optimise differently.
func WasmOptVersion(ctx context.Context) (string, error) {
	opt, err := WasmOpt()
	if err != nil {
		return "", err
	}
	out, err := exec.CommandContext(ctx, opt, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("wasm-opt --version: %v", err)
	}
	return strings.TrimSpace(string(out)), nil
}
