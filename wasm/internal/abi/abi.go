// Package abi holds the numbers of guard.wasm's ABI (docs/wasm-abi.md) that
// both sides must agree on: the guest (wasm/internal/guest) answers with
// them and the Go host (package wasm, which exports the codes) reads them.
// It imports nothing, so the guest pays nothing for it.
package abi

// The negative result codes. They are part of the contract: hosts in any
// language match on them.
const (
	CodeInvalidResource = -1 // resource id empty, over 160 bytes, not UTF-8, or with a control character
	CodeInvalidToken    = -2 // token <= 0
	CodeBadMemory       = -3 // pointer and length not inside one live guard_alloc buffer, or length < 0
	CodeUnknownHandle   = -4 // a handle guard_handle never returned
	CodeBadSignature    = -5 // signed mode: no signature a trusted key made for this resource and token
	CodeInvalidKey      = -6 // guard_trust_key: not a 32-byte key
	CodeTooManyKeys     = -7 // guard_trust_key: ledger.MaxTrustedKeys (16) keys are trusted already
	CodeInternal        = -8 // any other guest failure
	CodeSharedToken     = -9 // signed mode: a write presented a shared grant's token (a read phase's)
)

// Version is what guard_abi_version answers. It grows when exports are
// added; existing ones never change. 2 added guard_check_batch,
// guard_trust_key, guard_check_signed and guard_check_signed_handle; 3
// added guard_check_signed_read and guard_check_signed_read_handle, and
// the code -9 of a write with a shared token.
const Version = 3

// BatchRecord is the size of one guard_check_batch record: in, a handle
// (u32 at +0, 4 bytes ignored) and a token (i64 at +8); out, the
// guard_check_handle code (i64 at +0) and the mark it was compared with
// (i64 at +8). Little-endian, as WebAssembly memory is.
const BatchRecord = 16
