package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/wire"
)

// wireValue converts domain values in error fields to their wire form,
// inside the lists and objects of the primitives' refusals too (a
// multi-lock's held locks, a campaign's leader).
func wireValue(v any) any {
	switch v := v.(type) {
	case time.Time:
		return wire.Time(v)
	case fenceview.Leader:
		return leaderWire(v)
	case *fenceview.Leader:
		if v == nil {
			return nil
		}
		return leaderWire(*v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = wireValue(e)
		}
		return out
	case []map[string]any:
		out := make([]map[string]any, len(v))
		for i, e := range v {
			out[i] = wireValue(e).(map[string]any)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = wireValue(e)
		}
		return out
	default:
		return v
	}
}

// decode reads one JSON object from the body into v (an *opBody, or a
// struct decoded by encoding/json). An empty body is an error unless
// allowEmpty; trailing data is an error; so is a field v does not define.
func decode(w http.ResponseWriter, r *http.Request, v any, limit int64, allowEmpty bool) error {
	buf := getBuffer()
	defer putBuffer(buf)
	// A declared length within the limit is already enforced by the server;
	// anything else is cut at the limit (and the connection then closed).
	var body io.Reader = r.Body
	if r.ContentLength < 0 || r.ContentLength > limit {
		body = http.MaxBytesReader(w, r.Body, limit)
	}
	if _, err := buf.ReadFrom(body); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return fenceview.Errorf(fenceview.ETOOLARGE, "request body over %d bytes", limit)
		}
		return fenceview.Errorf(fenceview.EINVALID, "reading request body: %v", err)
	}
	// Read to its end, the body is closed here: net/http would otherwise
	// try to discard the rest of it before the answer, at an allocation
	// or two a request.
	r.Body.Close()
	return decodeBody(buf.Bytes(), v, allowEmpty)
}

// decodeBody is decode once the body is read. Nothing in v refers to b.
func decodeBody(b []byte, v any, allowEmpty bool) error {
	if len(bytes.TrimSpace(b)) == 0 {
		if allowEmpty {
			return nil
		}
		return fenceview.Errorf(fenceview.EINVALID, "a JSON object body is required")
	}
	if ob, ok := v.(*opBody); ok {
		return decodeOp(b, ob.op, ob.fields, &ob.req)
	}
	return decodeStrict(b, v, "this operation")
}

// opBody is the body of one of the wire's operations (op), read as the
// RPC stream reads its lines: into a wire.Request, allocating nothing on
// the plain shape clients send, its fields held to op's.
type opBody struct {
	op     string
	fields wire.Fields
	req    wire.Request
}

// Request bodies and answers are read and built in pooled buffers: the
// busiest routes then allocate only what they keep.
// An answer is appended to a buffer's spare capacity (AvailableBuffer).
var bufferPool = sync.Pool{New: func() any { return bytes.NewBuffer(make([]byte, 0, 1024)) }}

func getBuffer() *bytes.Buffer { return bufferPool.Get().(*bytes.Buffer) }

func putBuffer(b *bytes.Buffer) {
	if b.Cap() > 64<<10 { // a rare large report: let it go
		return
	}
	b.Reset()
	bufferPool.Put(b)
}

// requestError is a body or request line encoding/json could not read,
// as the API answers it: invalid-request, naming the field at fault when
// there is one.
func requestError(what string, err error) error {
	e := fenceview.Errorf(fenceview.EINVALID, "%s: %s", what, describeJSONError(err))
	var typeErr *json.UnmarshalTypeError
	var fieldErr *wire.FieldError
	if errors.As(err, &fieldErr) {
		e.Fields = map[string]any{"field": fieldErr.Field}
	} else if errors.As(err, &typeErr) && typeErr.Field != "" {
		e.Fields = map[string]any{"field": typeErr.Field}
	}
	return e
}

func describeJSONError(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	var fieldErr *wire.FieldError
	switch {
	case errors.As(err, &fieldErr) && errors.Is(err, wire.ErrNotInteger):
		return fmt.Sprintf("field %q must be a JSON integer", fieldErr.Field)
	case errors.As(err, &fieldErr):
		return fmt.Sprintf("field %q is %v", fieldErr.Field, fieldErr.Err)
	case errors.As(err, &typeErr):
		if typeErr.Field != "" {
			return fmt.Sprintf("field %q must be %s, not %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
		}
		return fmt.Sprintf("expected a JSON object, not %s", typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("syntax error at byte %d", syntaxErr.Offset)
	case errors.Is(err, wire.ErrNotInteger):
		return "a token, leaseMs, waitMs, lockDelayMs, permits or slot must be a JSON integer"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected end of body"
	}
	return err.Error()
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "int64", "int", "int32":
		return "an integer"
	case "bool":
		return "true or false"
	case "slice":
		return "an array"
	case "struct", "map":
		return "an object"
	}
	return k
}

// The headers of every JSON answer, shared: assigning a slice allocates
// nothing, and net/http only reads them.
var (
	headerJSON    = []string{"application/json"}
	headerNoStore = []string{"no-store"}
)

// Wire forms of the domain types.

func grantWire(g fenceview.Grant) wire.Grant {
	return wire.Grant{
		ResourceID: g.ResourceID, Holder: g.Holder, HoldCount: g.HoldCount,
		ExpiresAt: wire.Time(g.ExpiresAt), LeaseMs: g.LeaseMs, Fencing: wire.FencingOf(g.Fencing), Shared: g.Fencing.Shared,
	}
}

func (s *Server) timesWire(resourceID string) *wire.Times {
	t := s.Service.LockTimes(resourceID)
	lock, _ := s.Service.Lock(resourceID) // valid: the resource was just read
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	window := func(d fenceview.DurationStats) wire.Durations {
		return wire.Durations{Count: d.Count, P50: ms(d.P50), P99: ms(d.P99), Max: ms(d.Max)}
	}
	return &wire.Times{Waiters: lock.Waiters, Wait: window(t.Waits), Hold: window(t.Holds)}
}

func resourceWire(r fenceview.Resource) wire.Resource {
	b := wire.Resource{
		ResourceID: r.ResourceID, HighWaterMark: r.HighWaterMark, LastToken: r.LastToken,
		Holder: wire.NullString(r.Holder), HoldCount: r.HoldCount, ExpiresAt: wire.Time(r.ExpiresAt),
		Accepted: r.Accepted, Rejected: r.Rejected, LastRejectionAt: wire.Time(r.LastRejectionAt),
		CounterAlarm: r.CounterAlarm,
		LockDelayMs:  r.LockDelayMs, Permits: r.Permits, Election: r.Election,
	}
	if !r.AvailableAt.IsZero() {
		at := wire.Time(r.AvailableAt)
		b.AvailableAt = &at
	}
	if r.Election {
		b.Value = &r.Value
	}
	return b
}

// EventWire converts an event to its stream form. A rejection always carries
// presented and required, even when required is 0.
func EventWire(e fenceview.Event) wire.Event {
	b := wire.Event{Seq: e.Seq, Type: e.Type, ResourceID: e.ResourceID, Token: e.Token, Holder: e.Holder,
		Reason: e.Reason, Source: e.Source, At: wire.Time(e.At)}
	switch e.Type {
	case fenceview.EventReject:
		b.Presented, b.Required = &e.Presented, &e.Required
	case fenceview.EventAlarm, fenceview.EventReset:
		b.Required = &e.Required
	case fenceview.EventRecover:
		b.Presented, b.Required = &e.Presented, &e.Required
	}
	if e.Value != "" || e.Type == fenceview.EventProclaim { // a proclaim's value is news even when empty
		b.Value = &e.Value
	}
	b.LockDelayMs, b.Permits, b.Access = e.LockDelayMs, e.Permits, e.Access
	return b
}
