//go:build wasip1

// Command guest is the WebAssembly guard: a WASI preview 1 reactor whose
// exports apply the guard's rule (package guard/core, the part of the guard
// that imports nothing heavy) to the bytes a host passes in.
//
// Build it with go generate in the wasm package; the result is guard.wasm.
// Every export validates its input and answers with a code; none traps on bad
// input, and bad input changes nothing. docs/wasm-abi.md is the ABI.
package main

import (
	"unsafe"

	"github.com/fenceview/fenceview/guard/core"
)

// The ABI's negative codes. They are part of the contract: hosts in any
// language match on them.
const (
	codeInvalidResource = -1 // resource id empty, over 160 bytes, not UTF-8, or with a control character
	codeInvalidToken    = -2 // token <= 0
	codeBadMemory       = -3 // pointer and length are not inside one live guard_alloc buffer, or length < 0
	codeUnknownHandle   = -4 // a handle guard_handle never returned
	codeBadSignature    = -5 // signed mode: the token has no signature a trusted key made for it
	codeInvalidKey      = -6 // guard_trust_key: not 32 bytes
	codeTooManyKeys     = -7 // guard_trust_key: already core.MaxTrustedKeys keys
	codeInternal        = -8 // a guest failure that is none of the above
)

// abiVersion grows when exports are added; existing ones never change.
// 2 added guard_check_batch, guard_trust_key, guard_check_signed and
// guard_check_signed_handle.
const abiVersion = 2

// maxAlloc bounds one guard_alloc: ids are at most 160 bytes, so anything far
// larger is a host bug, answered with 0 rather than exhausting memory.
const maxAlloc = 1 << 20

// table holds the marks. A Ledger has no lock: the host calls one export at
// a time and nothing else in the module touches it.
var table core.Ledger

// lastRequired is the high-water mark the last check compared its token with
// (for an accepted token, the mark before it was raised; for -5, the current
// mark). guard_check's result cannot carry it, so hosts that want the full
// decision read it from the address guard_last_required_ptr returns. It is a
// global: it never moves.
var lastRequired int64

// live keeps every buffer guard_alloc handed out referenced until
// guard_free, so the garbage collector (which never moves objects) neither
// frees nor reuses memory the host is writing into. It is also the set of
// ranges the exports agree to read. A slice, not a map: hosts keep a few
// buffers, and a map of them costs the module 15 KB of map code.
var live [][]byte

// maxLive bounds the buffers alive at once: past it guard_alloc answers 0,
// so a leaking host cannot make every lookup scan a huge list.
const maxLive = 1024

// last remembers the buffer the previous call read, because hosts pass the
// same scratch buffer over and over.
var last []byte

func main() {}

//go:wasmexport guard_abi_version
func guardABIVersion() int32 { return abiVersion }

//go:wasmexport guard_last_required_ptr
func guardLastRequiredPtr() int32 { return int32(uint32(uintptr(unsafe.Pointer(&lastRequired)))) }

//go:wasmexport guard_alloc
func guardAlloc(size int32) int32 {
	if size < 1 || size > maxAlloc || len(live) >= maxLive {
		return 0
	}
	b := make([]byte, size)
	live = append(live, b)
	return int32(uint32(base(b)))
}

//go:wasmexport guard_free
func guardFree(ptr int32) {
	p := uintptr(uint32(ptr))
	for i, b := range live {
		if base(b) == p {
			if last != nil && base(last) == p {
				last = nil
			}
			live[i] = live[len(live)-1]
			live[len(live)-1] = nil
			live = live[:len(live)-1]
			return
		}
	}
}

func base(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

//go:wasmexport guard_check
func guardCheck(ptr, n int32, token int64) int64 {
	id, code := resourceID(ptr, n)
	if code != 0 {
		return code
	}
	return resultCode(table.Check(id, token))
}

//go:wasmexport guard_high_water
func guardHighWater(ptr, n int32) int64 {
	id, code := resourceID(ptr, n)
	if code != 0 {
		return code
	}
	hwm, err := table.HighWater(id)
	if err != nil {
		return errCode(err)
	}
	return hwm
}

//go:wasmexport guard_seed
func guardSeed(ptr, n int32, token int64) int64 {
	id, code := resourceID(ptr, n)
	if code != 0 {
		return code
	}
	hwm, err := table.Seed(id, token)
	if err != nil {
		return errCode(err)
	}
	return hwm
}

//go:wasmexport guard_handle
func guardHandle(ptr, n int32) int32 {
	id, code := resourceID(ptr, n)
	if code != 0 {
		return int32(code)
	}
	h, err := table.Handle(id)
	if err != nil {
		return int32(errCode(err))
	}
	// Handles are dense from 1; 2^31 resources would exhaust memory first.
	return int32(h)
}

//go:wasmexport guard_check_handle
func guardCheckHandle(h int32, token int64) int64 {
	// A negative h becomes a handle above any given out: unknown.
	return checkHandle(core.Handle(uint32(h)), token)
}

// checkHandle is core.Ledger.CheckHandle as a code, written out so that the
// hot path is a handful of instructions: no error values, no Result. The
// order of the checks is CheckHandle's (token, handle, signed mode).
func checkHandle(h core.Handle, token int64) int64 {
	if token <= 0 {
		return codeInvalidToken
	}
	if !table.Valid(h) {
		return codeUnknownHandle
	}
	if table.Signed() {
		return badSignature(h)
	}
	required, ok := table.CheckValid(h, token)
	lastRequired = required
	if ok {
		return 0
	}
	return required
}

// badSignature answers a check by handle in signed mode, out of line so
// that checkHandle stays small enough to inline.
func badSignature(h core.Handle) int64 {
	lastRequired, _ = table.HighWaterHandle(h)
	return codeBadSignature
}

// batchRecord is the size of one guard_check_batch record: in, a handle
// (u32 at +0, 4 bytes ignored) and a token (i64 at +8); out, the
// guard_check_handle code (i64 at +0) and the mark it was compared with
// (i64 at +8). Little-endian, as WebAssembly memory is.
const batchRecord = 16

//go:wasmexport guard_check_batch
func guardCheckBatch(ptr, n int32) int32 {
	if n < 0 || n > maxAlloc/batchRecord {
		return codeBadMemory
	}
	if n == 0 {
		return 0
	}
	b := bytesAt(uintptr(uint32(ptr)), int(n)*batchRecord)
	if b == nil {
		return codeBadMemory
	}
	// checkHandle written out once more: a Go call per record costs as
	// much as the rule in WebAssembly.
	signed := table.Signed()
	for i := 0; i < len(b); i += batchRecord {
		rec := (*[2]int64)(unsafe.Pointer(&b[i]))
		h, token := core.Handle(uint32(rec[0])), rec[1]
		switch {
		case token <= 0:
			rec[0], rec[1] = codeInvalidToken, 0
		case !table.Valid(h):
			rec[0], rec[1] = codeUnknownHandle, 0
		case signed:
			rec[0], rec[1] = badSignature(h), lastRequired
		default:
			required, ok := table.CheckValid(h, token)
			rec[1] = required
			if ok {
				rec[0] = 0
			} else {
				rec[0] = required
			}
		}
	}
	return n
}

//go:wasmexport guard_high_water_handle
func guardHighWaterHandle(h int32) int64 {
	hwm, err := table.HighWaterHandle(core.Handle(uint32(h)))
	if err != nil {
		return errCode(err)
	}
	return hwm
}

//go:wasmexport guard_trust_key
func guardTrustKey(ptr, n int32) int64 {
	if n != core.PublicKeySize {
		return codeInvalidKey
	}
	key := bytesAt(uintptr(uint32(ptr)), int(n))
	if key == nil {
		return codeBadMemory
	}
	if err := table.Trust(key); err != nil {
		if err == core.ErrTooManyKeys {
			return codeTooManyKeys
		}
		return codeInvalidKey
	}
	return 0
}

//go:wasmexport guard_check_signed
func guardCheckSigned(ptr, n int32, token int64, sigPtr, sigLen int32) int64 {
	id, code := resourceID(ptr, n)
	if code != 0 {
		return code
	}
	// A signature of a size no signature has is simply bad (-5, once a
	// key is trusted); only a readable one is looked up in memory.
	var sig []byte
	if sigLen == core.SignatureSize {
		if sig = bytesAt(uintptr(uint32(sigPtr)), int(sigLen)); sig == nil {
			return codeBadMemory
		}
	} else if sigLen < 0 {
		return codeBadMemory
	}
	return resultCode(table.CheckSigned(id, token, sig))
}

//go:wasmexport guard_check_signed_handle
func guardCheckSignedHandle(h int32, token int64, sigPtr, sigLen int32) int64 {
	var sig []byte
	if sigLen == core.SignatureSize {
		if sig = bytesAt(uintptr(uint32(sigPtr)), int(sigLen)); sig == nil {
			return codeBadMemory
		}
	} else if sigLen < 0 {
		return codeBadMemory
	}
	return resultCode(table.CheckSignedHandle(core.Handle(uint32(h)), token, sig))
}

// resultCode encodes a result: 0 accepted, the required token when refused
// as stale (always >= 2, as tokens are >= 1), -5 for a bad signature, or a
// negative code for invalid input.
func resultCode(r core.Result, err error) int64 {
	if err != nil {
		return errCode(err)
	}
	lastRequired = r.Required
	switch {
	case r.Accepted:
		return 0
	case r.Reason == core.ReasonBadSignature:
		return codeBadSignature
	}
	return r.Required
}

func errCode(err error) int64 {
	switch core.Kind(err) {
	case core.ErrInvalidResourceID:
		return codeInvalidResource
	case core.ErrInvalidToken:
		return codeInvalidToken
	case core.ErrUnknownHandle:
		return codeUnknownHandle
	}
	return codeInternal
}

// resourceID returns the id at [ptr, ptr+n) without copying. Lengths the
// guard refuses anyway are refused before memory is looked at, so they give
// the same code as the native guard whatever the pointer.
func resourceID(ptr, n int32) (string, int64) {
	if n == 0 || n > core.MaxResourceIDLen {
		return "", codeInvalidResource
	}
	if n < 0 {
		return "", codeBadMemory
	}
	b := bytesAt(uintptr(uint32(ptr)), int(n))
	if b == nil {
		return "", codeBadMemory
	}
	return unsafe.String(&b[0], len(b)), 0
}

// bytesAt returns the n bytes at p if they lie inside one live buffer, else
// nil. Reading anywhere else could trap (past the end of memory) or read the
// guest's own data, so it is refused.
func bytesAt(p uintptr, n int) []byte {
	if b := within(last, p, n); b != nil {
		return b
	}
	for _, buf := range live {
		if b := within(buf, p, n); b != nil {
			last = buf
			return b
		}
	}
	return nil
}

func within(buf []byte, p uintptr, n int) []byte {
	if buf == nil {
		return nil
	}
	start := base(buf)
	if p < start || p-start >= uintptr(len(buf)) {
		return nil
	}
	off := int(p - start)
	if n > len(buf)-off {
		return nil
	}
	return buf[off : off+n]
}
