//go:build wasip1

// Command extism is the WebAssembly guard as an Extism plugin
// (guard-extism.wasm): the same ledger as guard.wasm and guard.Guard
// (package guard/ledger), behind functions that take and return JSON
// through the Extism kernel (extism:host/env), as docs/wasm-abi.md's
// Extism section says.
//
// Marks and trusted keys live in the plugin instance from call to call.
// Invalid input fails the call with an Extism error; it is never answered
// as a decision. docs/wasm-abi.md documents it for plugin authors.
package main

import (
	"errors"
	"strconv"
	"unsafe"

	"github.com/fenceview/fenceview/guard/ledger"
	"github.com/fenceview/fenceview/wasm/internal/b64url"
	"github.com/fenceview/fenceview/wasm/internal/flatjson"
)

// The Extism kernel: a host-side memory the plugin reads its input from and
// writes its output and errors into, addressed by 64-bit offsets.
//
//go:wasmimport extism:host/env input_length
func inputLength() uint64

//go:wasmimport extism:host/env input_load_u8
func inputLoadU8(offset uint64) uint32

//go:wasmimport extism:host/env input_load_u64
func inputLoadU64(offset uint64) uint64

//go:wasmimport extism:host/env alloc
func extismAlloc(n uint64) uint64

//go:wasmimport extism:host/env store_u8
func storeU8(offset uint64, v uint32)

//go:wasmimport extism:host/env store_u64
func storeU64(offset uint64, v uint64)

//go:wasmimport extism:host/env output_set
func outputSet(offset, n uint64)

//go:wasmimport extism:host/env error_set
func errorSet(offset uint64)

func main() {}

// table holds the marks and the trusted keys. Extism calls a plugin
// instance one function at a time.
var table ledger.Ledger

// maxInput bounds the JSON a call reads: the largest valid input (an id of
// 160 bytes, each escaped as \uXXXX, and the longest signature carrier,
// 1,463 characters) is far below it.
const maxInput = 64 << 10

// request is every function's input; each reads the fields it needs.
// Unknown fields are ignored.
type request struct {
	ResourceID string
	Token      int64
	Signature  string
	PublicKey  string
	Access     string // "write" (or left out) or "read"
}

// fields are request's members, for flatjson (encoding/json's decisions
// without its 1.2 MB).
func (r *request) fields() []flatjson.Field {
	return []flatjson.Field{
		{Name: "resourceId", Str: &r.ResourceID},
		{Name: "token", Int: &r.Token},
		{Name: "signature", Str: &r.Signature},
		{Name: "publicKey", Str: &r.PublicKey},
		{Name: "access", Str: &r.Access},
	}
}

// read reports whether the request guards a read; an access that is
// neither "read" nor "write" is invalid input.
func (r *request) read() (bool, error) {
	switch r.Access {
	case "", "write":
		return false, nil
	case "read":
		return true, nil
	}
	return false, errors.New(`access: want "read" or "write"`)
}

var errNotJSON = errors.New("input is not a JSON object")

// input reads and parses the call's input.
func input() (request, error) {
	var r request
	n := inputLength()
	if n > maxInput {
		return r, errors.New("input longer than " + strconv.Itoa(maxInput) + " bytes")
	}
	b := make([]byte, n)
	i := uint64(0)
	for ; i+8 <= n; i += 8 {
		*(*uint64)(unsafe.Pointer(&b[i])) = inputLoadU64(i) // little-endian, as wasm memory
	}
	for ; i < n; i++ {
		b[i] = byte(inputLoadU8(i))
	}
	// Invalid UTF-8 is refused (encoding/json would turn it into U+FFFD,
	// making another resource id than the bytes sent).
	if err := flatjson.Decode(b, r.fields()); err != nil {
		return r, errors.New(errNotJSON.Error() + " of the expected fields: " + err.Error())
	}
	return r, nil
}

// store copies b into a new block of Extism memory and returns its offset.
func store(b []byte) uint64 {
	n := uint64(len(b))
	off := extismAlloc(n)
	i := uint64(0)
	for ; i+8 <= n; i += 8 {
		storeU64(off+i, *(*uint64)(unsafe.Pointer(&b[i])))
	}
	for ; i < n; i++ {
		storeU8(off+i, uint32(b[i]))
	}
	return off
}

// reply sets the call's output (0) or its error (1), which is what the
// exported function returns.
func reply(out []byte, err error) int32 {
	if err != nil {
		errorSet(store([]byte(err.Error())))
		return 1
	}
	outputSet(store(out), uint64(len(out)))
	return 0
}

// decision is the JSON of a result: {"accepted":true} or
// {"accepted":false,"reason":...,"required":N}.
func decision(r ledger.Result, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	if r.Accepted {
		return []byte(`{"accepted":true}`), nil
	}
	b := append([]byte(`{"accepted":false,"reason":"`), r.Reason...)
	b = append(b, `","required":`...)
	b = strconv.AppendInt(b, r.Required, 10)
	return append(b, '}'), nil
}

func mark(hwm int64, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	b := strconv.AppendInt([]byte(`{"highWaterMark":`), hwm, 10)
	return append(b, '}'), nil
}

// serve runs an exported function: do on the call's parsed input, its
// output or error the reply.
func serve(do func(r request) ([]byte, error)) int32 {
	r, err := input()
	if err != nil {
		return reply(nil, err)
	}
	return reply(do(r))
}

//go:wasmexport check
func check() int32 {
	return serve(func(r request) ([]byte, error) {
		// Unsigned, a read and a write meet the same rule.
		if _, err := r.read(); err != nil {
			return nil, err
		}
		return decision(table.Check(r.ResourceID, r.Token))
	})
}

//go:wasmexport check_signed
func checkSigned() int32 {
	return serve(func(r request) ([]byte, error) {
		// A missing or malformed signature is a bad signature (a decision),
		// not invalid input: the token may still be refused as bad-signature.
		// The carrier is 64 bytes or a batch carrier: its length says which.
		read, err := r.read()
		if err != nil {
			return nil, err
		}
		var sig []byte
		if n := len(r.Signature) * 6 / 8; ledger.IsCarrierSize(n) {
			sig = b64url.Decode(r.Signature, n)
		}
		return decision(table.CheckSignedAccess(r.ResourceID, r.Token, sig, read))
	})
}

//go:wasmexport trust_key
func trustKey() int32 {
	return serve(func(r request) ([]byte, error) {
		key := b64url.Decode(r.PublicKey, ledger.PublicKeySize)
		if key == nil {
			return nil, errors.New(ledger.ErrInvalidPublicKey.Error() + ": want base64url without padding of 32 bytes")
		}
		if err := table.Trust(key); err != nil {
			return nil, err
		}
		return []byte(`{}`), nil
	})
}

//go:wasmexport seed
func seed() int32 {
	return serve(func(r request) ([]byte, error) { return mark(table.Seed(r.ResourceID, r.Token)) })
}

//go:wasmexport high_water
func highWater() int32 {
	return serve(func(r request) ([]byte, error) { return mark(table.HighWater(r.ResourceID)) })
}
