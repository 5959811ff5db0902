package fenceview

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/fenceview/fenceview/guard"
)

// Refusal codes: the "code" of every 4xx and 5xx JSON body and of every
// refused RPC operation, a stable lowercase word a program branches on
// (the message is for people and may change). The HTTP layer maps each
// to its status (internal/httpapi/status.go); docs/errors.md says what each means and what to do.
const (
	EINVALID          = "invalid-request"    // malformed JSON, a field of the wrong type or out of bounds, a bad query parameter; Fields["field"] names the field at fault
	EUNKNOWNFIELD     = "unknown-field"      // a body field the operation does not define; Fields["field"] names it
	EINVALIDTOKEN     = "invalid-token"      // a missing or ill-formed fencing token, or header and body disagree
	ETOOLARGE         = "too-large"          // a body or batch over its limit
	EUNAUTHENTICATED  = "unauthenticated"    // credential missing, unknown or revoked
	EFORBIDDEN        = "forbidden"          // a known credential not allowed this, or a cross-site request
	ENOTFOUND         = "not-found"          // no such route or thing
	EMETHODNOTALLOWED = "method-not-allowed" // the route exists for other methods
	ELOCKHELD         = "lock-held"          // acquire, acquire-all or campaign while another holds a lock
	ELOCKDELAY        = "lock-delay"         // acquire during a lock-delay; Fields["availableAt"]
	ELEASEEXPIRED     = "lease-expired"      // renew or release by the holder whose lease ran out or was force-expired; Fields["expiredAt"]
	ENOTOWNER         = "not-owner"          // renew or release of a lock another holder (or key) holds
	ENOTHELD          = "not-held"           // renew or release of a free lock
	ENOPERMIT         = "no-permit"          // every slot of a semaphore is taken; Fields["permits"]
	EPERMITSMISMATCH  = "permits-mismatch"   // a semaphore acquire with other permits than the stored ones; Fields["permits"]
	ENOTLEADER        = "not-leader"         // proclaim, resign or renew of an election by a non-leader
	EEXHAUSTED        = "exhausted"          // a resource's tokens are exhausted; an admin recovers it
	ECONFLICT         = "conflict"           // an admin change the server's state refuses (a signing key in use, keys with auth off, recovering a held lock)
	EOVERLOADED       = "overloaded"         // shed under load; Fields["retryAfterMs"], header Retry-After
	ELIMIT            = "limit"              // a server limit reached (resources, waiters, connections); nothing changed
	EUNAVAILABLE      = "unavailable"        // no leader, shutting down, or the durable record could not be written
	EINTERNAL         = "internal"           // a bug or an unexpected failure

	// A refused fence's code is its reason.
	ESTALETOKEN    = guard.ReasonStale
	ESUPERSEDED    = guard.ReasonSuperseded
	EBADSIGNATURE  = guard.ReasonBadSignature
	EUNISSUEDTOKEN = guard.ReasonUnissued
	EFOREIGNISSUER = guard.ReasonForeignIssuer
	ESCOPEMISMATCH = guard.ReasonScopeMismatch
	ESHAREDTOKEN   = guard.ReasonSharedToken
)

// refusals are the codes by which the state says no: the lock, the
// semaphore, the election, the guard or the server's own state refused a
// well-formed request (the HTTP layer answers them 409). Anything else is
// bad input, a credential, a limit or a failure.
var refusals = map[string]bool{
	ELOCKHELD: true, ELOCKDELAY: true, ELEASEEXPIRED: true, ENOTOWNER: true, ENOTHELD: true,
	ENOPERMIT: true, EPERMITSMISMATCH: true, ENOTLEADER: true, EEXHAUSTED: true, ECONFLICT: true,
	ESTALETOKEN: true, ESUPERSEDED: true, EBADSIGNATURE: true, EUNISSUEDTOKEN: true, EFOREIGNISSUER: true, ESCOPEMISMATCH: true,
	ESHAREDTOKEN: true,
}

// IsRefusalCode reports whether code is one by which the state says no
// (see IsRefusal).
func IsRefusalCode(code string) bool { return refusals[code] }

// RefusalCodes lists the codes of IsRefusalCode.
func RefusalCodes() []string { return slices.Sorted(maps.Keys(refusals)) }

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

// FieldErrorf returns an *Error with the given code about one field of the
// request, named in Fields["field"].
func FieldErrorf(code, field, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Fields: map[string]any{"field": field}}
}

// ErrorCode returns the code of err, EINTERNAL for errors without one.
func ErrorCode(err error) string { return described(err).Code }

// IsRefusal reports whether err is a refusal by the state (lock-held,
// not-owner, a fence's reason...), as opposed to bad input or a failure.
func IsRefusal(err error) bool {
	return err != nil && refusals[ErrorCode(err)]
}

// ErrorMessage returns the user-facing message of err; internal errors are
// not described to users.
func ErrorMessage(err error) string { return described(err).Message }

// described is err as users may see it: its *Error, the zero Error for
// nil, and for any other error EINTERNAL with no detail.
func described(err error) Error {
	if err == nil {
		return Error{}
	}
	if e, ok := err.(*Error); ok { // the usual case, without errors.As's allocation
		return *e
	}
	var e *Error
	if errors.As(err, &e) {
		return *e
	}
	return Error{Code: EINTERNAL, Message: "internal error"}
}
