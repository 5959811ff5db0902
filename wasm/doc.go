// Package wasm runs fenceview's guard as WebAssembly: guard.wasm, a WASI
// reactor built from package guard/ledger (the one ledger guard.Guard also
// runs, behind its mutex), embedded here and hosted on wazero.
//
// Guard gives the same decisions as guard.Guard, from the module every other
// runtime (Node's node:wasi, wasmtime, a proxy filter) loads, so a plugin
// author can check that their host agrees with the Go library byte for byte.
//
//	g, err := wasm.New(ctx, wasm.Config{})
//	if err != nil { ... }
//	defer g.Close(ctx)
//	d, err := g.Check("inventory:42", token)
//	if err != nil { /* bad input: nothing changed */ }
//	if !d.Accepted { /* stale writer: refuse, report d.Required */ }
//
// # Notes
//
//   - The module is compiled once per process (a shared compilation cache,
//     optionally on disk: Config.CacheDir) and started with _initialize.
//   - A wazero instance is not safe for concurrent calls, and each instance
//     keeps its own high-water marks. Guard routes every resource to one
//     fixed instance (Config.Shards, by a hash of the id) and calls each
//     instance under its own lock, so the rule holds for the whole Guard
//     while distinct resources can be checked in parallel.
//   - Handle and CheckHandle skip passing and hashing the id on each call.
//   - Reporter ships decisions to a fenceview server without ever blocking
//     or failing a check; SeedFromServer and SeedMap restore marks. Both
//     speak to the server through package client.
//   - Bytes and ETag return the module itself; its bytes live in package
//     modules (internal/modules), which the HTTP API serves (GET /guard.wasm)
//     without linking a WebAssembly runtime.
//   - docs/wasm-abi.md describes the module's exports for hosts in any
//     language.
package wasm
