//go:build wasip1

// Command guest is the WebAssembly guard: a WASI preview 1 reactor whose
// exports apply fenceview's one ledger (package guard/ledger, which
// guard.Guard runs too, and which imports nothing heavy) to the bytes a
// host passes in.
//
// Build it with go generate in the wasm package; the result is guard.wasm.
// Every export validates its input and answers with a code; none traps on bad
// input, and bad input changes nothing. docs/wasm-abi.md is the ABI.
package main

import (
	"unsafe"

	"github.com/fenceview/fenceview/guard/ledger"
	"github.com/fenceview/fenceview/wasm/internal/abi"
)

// maxAlloc bounds one guard_alloc: ids are at most 160 bytes, so anything far
// larger is a host bug, answered with 0 rather than exhausting memory.
const maxAlloc = 1 << 20

// table holds the marks. A Ledger has no lock: the host calls one export at
// a time and nothing else in the module touches it.
var table ledger.Ledger

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
func guardABIVersion() int32 { return abi.Version }

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
	return checkHandle(ledger.Handle(uint32(h)), token)
}

// checkHandle is ledger.Ledger.CheckHandle as a code, written out so that the
// hot path is a handful of instructions: no error values, no Result. The
// order of the checks is CheckHandle's (token, handle, signed mode).
func checkHandle(h ledger.Handle, token int64) int64 {
	if token <= 0 {
		return abi.CodeInvalidToken
	}
	if !table.Valid(h) {
		return abi.CodeUnknownHandle
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
func badSignature(h ledger.Handle) int64 {
	lastRequired, _ = table.HighWaterHandle(h)
	return abi.CodeBadSignature
}

//go:wasmexport guard_check_batch
func guardCheckBatch(ptr, n int32) int32 {
	if n < 0 || n > maxAlloc/abi.BatchRecord {
		return abi.CodeBadMemory
	}
	if n == 0 {
		return 0
	}
	b := bytesAt(uintptr(uint32(ptr)), int(n)*abi.BatchRecord)
	if b == nil {
		return abi.CodeBadMemory
	}
	// checkHandle written out once more: a Go call per record costs as
	// much as the rule in WebAssembly.
	signed := table.Signed()
	for i := 0; i < len(b); i += abi.BatchRecord {
		rec := (*[2]int64)(unsafe.Pointer(&b[i]))
		h, token := ledger.Handle(uint32(rec[0])), rec[1]
		switch {
		case token <= 0:
			rec[0], rec[1] = abi.CodeInvalidToken, 0
		case !table.Valid(h):
			rec[0], rec[1] = abi.CodeUnknownHandle, 0
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
	hwm, err := table.HighWaterHandle(ledger.Handle(uint32(h)))
	if err != nil {
		return errCode(err)
	}
	return hwm
}

//go:wasmexport guard_trust_key
func guardTrustKey(ptr, n int32) int64 {
	if n != ledger.PublicKeySize {
		return abi.CodeInvalidKey
	}
	key := bytesAt(uintptr(uint32(ptr)), int(n))
	if key == nil {
		return abi.CodeBadMemory
	}
	if err := table.Trust(key); err != nil {
		if err == ledger.ErrTooManyKeys {
			return abi.CodeTooManyKeys
		}
		return abi.CodeInvalidKey
	}
	return 0
}

//go:wasmexport guard_check_signed
func guardCheckSigned(ptr, n int32, token int64, sigPtr, sigLen int32) int64 {
	return checkSigned(ptr, n, token, sigPtr, sigLen, false)
}

//go:wasmexport guard_check_signed_read
func guardCheckSignedRead(ptr, n int32, token int64, sigPtr, sigLen int32) int64 {
	return checkSigned(ptr, n, token, sigPtr, sigLen, true)
}

func checkSigned(ptr, n int32, token int64, sigPtr, sigLen int32, read bool) int64 {
	id, code := resourceID(ptr, n)
	if code != 0 {
		return code
	}
	sig, code := signature(sigPtr, sigLen)
	if code != 0 {
		return code
	}
	return resultCode(table.CheckSignedAccess(id, token, sig, read))
}

//go:wasmexport guard_check_signed_handle
func guardCheckSignedHandle(h int32, token int64, sigPtr, sigLen int32) int64 {
	return checkSignedHandle(h, token, sigPtr, sigLen, false)
}

//go:wasmexport guard_check_signed_read_handle
func guardCheckSignedReadHandle(h int32, token int64, sigPtr, sigLen int32) int64 {
	return checkSignedHandle(h, token, sigPtr, sigLen, true)
}

func checkSignedHandle(h int32, token int64, sigPtr, sigLen int32, read bool) int64 {
	sig, code := signature(sigPtr, sigLen)
	if code != 0 {
		return code
	}
	return resultCode(table.CheckSignedHandleAccess(ledger.Handle(uint32(h)), token, sig, read))
}

// signature returns the signature carrier at [ptr, ptr+n) without copying:
// 64 bytes, or a batch carrier. One of a size no carrier has is simply bad
// (-5, once a key is trusted: nil here); only a readable one is looked up
// in memory.
func signature(ptr, n int32) ([]byte, int64) {
	if n < 0 {
		return nil, abi.CodeBadMemory
	}
	if !ledger.IsCarrierSize(int(n)) {
		return nil, 0
	}
	sig := bytesAt(uintptr(uint32(ptr)), int(n))
	if sig == nil {
		return nil, abi.CodeBadMemory
	}
	return sig, 0
}

// resultCode encodes a result: 0 accepted, the required token when refused
// as stale (always >= 2, as tokens are >= 1), -5 for a bad signature, -9
// for a write with a shared token, or a negative code for invalid input.
func resultCode(r ledger.Result, err error) int64 {
	if err != nil {
		return errCode(err)
	}
	lastRequired = r.Required
	switch {
	case r.Accepted:
		return 0
	case r.Reason == ledger.ReasonBadSignature:
		return abi.CodeBadSignature
	case r.Reason == ledger.ReasonSharedToken:
		return abi.CodeSharedToken
	}
	return r.Required
}

func errCode(err error) int64 {
	switch ledger.Kind(err) {
	case ledger.ErrInvalidResourceID:
		return abi.CodeInvalidResource
	case ledger.ErrInvalidToken:
		return abi.CodeInvalidToken
	case ledger.ErrUnknownHandle:
		return abi.CodeUnknownHandle
	}
	return abi.CodeInternal
}

// resourceID returns the id at [ptr, ptr+n) without copying. Lengths the
// guard refuses anyway are refused before memory is looked at, so they give
// the same code as the native guard whatever the pointer.
func resourceID(ptr, n int32) (string, int64) {
	if n == 0 || n > ledger.MaxResourceIDLen {
		return "", abi.CodeInvalidResource
	}
	if n < 0 {
		return "", abi.CodeBadMemory
	}
	b := bytesAt(uintptr(uint32(ptr)), int(n))
	if b == nil {
		return "", abi.CodeBadMemory
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
