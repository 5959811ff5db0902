//go:build wasip1

// Command guest is the WebAssembly guard: a WASI preview 1 reactor whose
// exports apply the guard package's rule to the bytes a host passes in.
//
// Build it with go generate in the wasm package; the result is guard.wasm.
// Every export validates its input and answers with a code; none traps on bad
// input, and bad input changes nothing. docs/wasm-abi.md is the ABI.
package main

import (
	"errors"
	"unsafe"

	"github.com/fenceview/fenceview/guard"
)

// The ABI's negative codes. They are part of the contract: hosts in any
// language match on them.
const (
	codeInvalidResource = -1 // resource id empty, over 160 bytes, not UTF-8, or with a control character
	codeInvalidToken    = -2 // token <= 0
	codeBadMemory       = -3 // pointer and length are not inside one live guard_alloc buffer, or length < 0
	codeUnknownHandle   = -4 // a handle guard_handle never returned
	codeInternal        = -5 // a guest failure that is none of the above
)

// abiVersion grows when exports are added; existing ones never change.
const abiVersion = 1

// maxAlloc bounds one guard_alloc: ids are at most 160 bytes, so anything far
// larger is a host bug, answered with 0 rather than exhausting memory.
const maxAlloc = 1 << 20

// table holds the marks. A Ledger has no lock: the host calls one export at
// a time and nothing else in the module touches it.
var table guard.Ledger

// lastRequired is the high-water mark the last check compared its token with
// (for an accepted token, the mark before it was raised). guard_check's
// result cannot carry it, so hosts that want the full decision read it from
// the address guard_last_required_ptr returns. It is a global: it never moves.
var lastRequired int64

// live keeps every buffer guard_alloc handed out referenced until
// guard_free, so the garbage collector (which never moves objects) neither
// frees nor reuses memory the host is writing into. It is also the set of
// ranges the exports agree to read.
var live = map[uintptr][]byte{}

// lastBase and lastBuf remember the buffer the previous call read, because
// hosts pass the same scratch buffer over and over.
var (
	lastBase uintptr
	lastBuf  []byte
)

func main() {}

//go:wasmexport guard_abi_version
func guardABIVersion() int32 { return abiVersion }

//go:wasmexport guard_last_required_ptr
func guardLastRequiredPtr() int32 { return int32(uint32(uintptr(unsafe.Pointer(&lastRequired)))) }

//go:wasmexport guard_alloc
func guardAlloc(size int32) int32 {
	if size < 1 || size > maxAlloc {
		return 0
	}
	b := make([]byte, size)
	p := uintptr(unsafe.Pointer(&b[0]))
	live[p] = b
	return int32(uint32(p))
}

//go:wasmexport guard_free
func guardFree(ptr int32) {
	p := uintptr(uint32(ptr))
	delete(live, p)
	if p == lastBase {
		lastBase, lastBuf = 0, nil
	}
}

//go:wasmexport guard_check
func guardCheck(ptr, n int32, token int64) int64 {
	id, code := resourceID(ptr, n)
	if code != 0 {
		return code
	}
	d, err := table.Check(id, token)
	return decisionCode(d, err)
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
	d, err := table.CheckHandle(guard.Handle(uint32(h)), token)
	return decisionCode(d, err)
}

//go:wasmexport guard_high_water_handle
func guardHighWaterHandle(h int32) int64 {
	hwm, err := table.HighWaterHandle(guard.Handle(uint32(h)))
	if err != nil {
		return errCode(err)
	}
	return hwm
}

// decisionCode encodes a decision: 0 accepted, the required token when
// refused (always >= 2, as tokens are >= 1), or a negative code.
func decisionCode(d guard.Decision, err error) int64 {
	if err != nil {
		return errCode(err)
	}
	lastRequired = d.Required
	if d.Accepted {
		return 0
	}
	return d.Required
}

func errCode(err error) int64 {
	switch {
	case errors.Is(err, guard.ErrInvalidResourceID):
		return codeInvalidResource
	case errors.Is(err, guard.ErrInvalidToken):
		return codeInvalidToken
	case errors.Is(err, guard.ErrUnknownHandle):
		return codeUnknownHandle
	}
	return codeInternal
}

// resourceID returns the id at [ptr, ptr+n) without copying. Lengths the
// guard refuses anyway are refused before memory is looked at, so they give
// the same code as the native guard whatever the pointer.
func resourceID(ptr, n int32) (string, int64) {
	if n == 0 || n > guard.MaxResourceIDLen {
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
	if b := within(lastBase, lastBuf, p, n); b != nil {
		return b
	}
	if buf, ok := live[p]; ok {
		if b := within(p, buf, p, n); b != nil {
			lastBase, lastBuf = p, buf
			return b
		}
		return nil
	}
	for base, buf := range live {
		if b := within(base, buf, p, n); b != nil {
			lastBase, lastBuf = base, buf
			return b
		}
	}
	return nil
}

func within(base uintptr, buf []byte, p uintptr, n int) []byte {
	if buf == nil || p < base || p-base >= uintptr(len(buf)) {
		return nil
	}
	off := int(p - base)
	if n > len(buf)-off {
		return nil
	}
	return buf[off : off+n]
}
