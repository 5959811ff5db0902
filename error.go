package fenceview

import (
	"errors"
	"fmt"
)

// Error codes. One place (httpapi) maps them to HTTP statuses.
const (
	EINVALID      = "invalid"      // bad input; nothing changed
	ECONFLICT     = "conflict"     // refused by the lock or the guard
	ENOTFOUND     = "not_found"    // no such thing
	EUNAUTHORIZED = "unauthorized" // credential missing, unknown or revoked
	EFORBIDDEN    = "forbidden"    // a known credential not allowed this, or a cross-site request
	ETOOLARGE     = "too_large"    // a body or batch over its limit
	ELIMIT        = "limit"        // a server limit reached (resources, waiters, connections); nothing changed
	EOVERLOADED   = "overloaded"   // shed under load, this caller at its share; nothing changed, retry after a while
	EUNAVAILABLE  = "unavailable"  // the durable record could not be written
	EINTERNAL     = "internal"     // a bug or an unexpected failure
)

// Error is an error with a code and a message meant for the user. Fields
// carries extra facts for the JSON body (the holder of a held lock, the
// token a stale writer needs).
type Error struct {
	Code    string
	Message string
	Fields  map[string]any
}

func (e *Error) Error() string { return fmt.Sprintf("fenceview: %s: %s", e.Code, e.Message) }

// Errorf returns an *Error with the given code.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err, EINTERNAL for errors without one.
func ErrorCode(err error) string { return described(err).Code }

// ErrorMessage returns the user-facing message of err; internal errors are
// not described to users.
func ErrorMessage(err error) string { return described(err).Message }

// described is err as users may see it: its *Error, the zero Error for
// nil, and for any other error EINTERNAL with no detail.
func described(err error) Error {
	var e *Error
	if err == nil {
		return Error{}
	} else if errors.As(err, &e) {
		return *e
	}
	return Error{Code: EINTERNAL, Message: "internal error"}
}
