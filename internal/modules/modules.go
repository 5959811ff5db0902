// Package modules holds the WebAssembly modules fenceview publishes (served
// at GET /<name>): their bytes and their ETags. It imports nothing outside
// the standard library, so the HTTP API can serve the modules without
// linking a WebAssembly runtime; hosting them is package wasm's job.
//
// The modules are built by go generate in package wasm and committed, so
// users of the package and of the server need no build step.
package modules

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"strings"
)

//go:embed guard.wasm
var guardWasm []byte

//go:embed guard-extism.wasm
var extismWasm []byte

//go:embed guard-http.wasm
var httpWasm []byte

// goVersion is the Go release that built the committed modules. A
// different release builds different bytes, so the staleness test can only
// compare against a build by the same one.
//
//go:embed guard.wasm.goversion
var goVersion string

// wasmOptVersion is the binaryen release whose wasm-opt optimised the
// committed modules; another release optimises differently.
//
//go:embed wasm-opt.version
var wasmOptVersion string

// Module is one published module.
type Module struct {
	name  string
	bytes []byte
	etag  string
}

func newModule(name string, b []byte) Module {
	sum := sha256.Sum256(b)
	return Module{name: name, bytes: b, etag: `"` + hex.EncodeToString(sum[:]) + `"`}
}

// Name is the file name the module is published under ("guard.wasm").
func (m Module) Name() string { return m.name }

// Bytes returns the module. The slice is shared: callers must not modify it.
func (m Module) Bytes() []byte { return m.bytes }

// ETag returns a strong HTTP entity tag for the module: the quoted hex
// SHA-256 of its bytes.
func (m Module) ETag() string { return m.etag }

// Guard is guard.wasm, the WASI reactor of the contract.
var Guard = newModule("guard.wasm", guardWasm)

// Extism is guard-extism.wasm, the same guard as an Extism plugin
// (docs/wasm-abi.md, the Extism module).
var Extism = newModule("guard-extism.wasm", extismWasm)

// HTTP is guard-http.wasm, the guard as an http-wasm handler for proxies
// (docs/wasm-abi.md, the http-wasm module).
var HTTP = newModule("guard-http.wasm", httpWasm)

// All lists every published module; a module added here is served by the
// HTTP API without further wiring.
func All() []Module { return []Module{Guard, Extism, HTTP} }

// GoVersion returns the Go release that built the modules, e.g. "go1.26.8".
func GoVersion() string { return strings.TrimSpace(goVersion) }

// WasmOptVersion returns what binaryen's wasm-opt, which optimised the
// modules, says its version is, e.g. "wasm-opt version 108".
func WasmOptVersion() string { return strings.TrimSpace(wasmOptVersion) }
