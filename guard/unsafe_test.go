package guard_test

import "unsafe"

// unsafeString aliases b, the way the WebAssembly exports pass ids.
func unsafeString(b []byte) string { return unsafe.String(&b[0], len(b)) }
