package wasm

import "github.com/fenceview/fenceview/internal/modules"

// go generate rebuilds the committed modules in ../internal/modules from
// ./internal/guest, ./internal/extism and ./internal/httpguest (it needs
// binaryen's wasm-opt).
//
//go:generate go run ./internal/gen

// Bytes returns the guard module (guard.wasm). The slice is shared: callers
// must not modify it.
func Bytes() []byte { return modules.Guard.Bytes() }

// GoVersion returns the Go release that built the guard module, e.g. "go1.26.8".
func GoVersion() string { return modules.GoVersion() }

// ETag returns a strong HTTP entity tag for the module: the quoted hex
// SHA-256 of its bytes.
func ETag() string { return modules.Guard.ETag() }

// ExtismBytes returns the guard as an Extism plugin (guard-extism.wasm;
// docs/wasm-abi.md). The slice is shared: callers must not modify it.
func ExtismBytes() []byte { return modules.Extism.Bytes() }

// HTTPBytes returns the guard as an http-wasm handler (guard-http.wasm;
// docs/wasm-abi.md), for proxies such as Traefik. The slice is shared:
// callers must not modify it.
func HTTPBytes() []byte { return modules.HTTP.Bytes() }
