package wasm

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"strings"
	"sync"
)

//go:generate go run ./internal/gen

// module is guard.wasm, built from ./internal/guest by go generate and
// committed, so users of the package and of the server need no build step.
//
//go:embed guard.wasm
var module []byte

// extismModule is guard-extism.wasm, the same guard as an Extism plugin,
// built and committed the same way.
//
//go:embed guard-extism.wasm
var extismModule []byte

// goVersion is the Go release that built the committed guard.wasm. A
// different release builds different bytes, so the staleness test can only
// compare against a build by the same one.
//
//go:embed guard.wasm.goversion
var goVersion string

// wasmOptVersion is the binaryen release whose wasm-opt optimised the
// committed modules.
//
//go:embed wasm-opt.version
var wasmOptVersion string

// Bytes returns the guard module (guard.wasm). The slice is shared: callers
// must not modify it.
func Bytes() []byte { return module }

// GoVersion returns the Go release that built the guard module, e.g. "go1.26.8".
func GoVersion() string { return strings.TrimSpace(goVersion) }

var etag = sync.OnceValue(func() string {
	sum := sha256.Sum256(module)
	return `"` + hex.EncodeToString(sum[:]) + `"`
})

// ETag returns a strong HTTP entity tag for the module: the quoted hex
// SHA-256 of its bytes.
func ETag() string { return etag() }

// ExtismBytes returns the guard as an Extism plugin (guard-extism.wasm;
// docs/wasm-abi.md). The slice is shared: callers must not modify it.
func ExtismBytes() []byte { return extismModule }

var extismETag = sync.OnceValue(func() string {
	sum := sha256.Sum256(extismModule)
	return `"` + hex.EncodeToString(sum[:]) + `"`
})

// ExtismETag is ETag for ExtismBytes.
func ExtismETag() string { return extismETag() }
