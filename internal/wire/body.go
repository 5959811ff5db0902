package wire

import (
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/fenceview/fenceview/guard"
)

// The bodies of the JSON API, as both ends read and write them. The
// RPC stream's answers carry the same bodies.

// Time is a time as the API writes it: TimeLayout in UTC, null when zero.
type Time time.Time

func (t Time) MarshalJSON() ([]byte, error) { return t.appendJSON(nil), nil }

// UnmarshalJSON reads any RFC 3339 time, as time.Time does; null leaves t
// as it was.
func (t *Time) UnmarshalJSON(b []byte) error { return (*time.Time)(t).UnmarshalJSON(b) }

func (t Time) appendJSON(dst []byte) []byte {
	tt := time.Time(t)
	if tt.IsZero() {
		return append(dst, "null"...)
	}
	return append(tt.UTC().AppendFormat(append(dst, '"'), TimeLayout), '"')
}

// NullString is a string that is null when empty.
type NullString string

func (s NullString) MarshalJSON() ([]byte, error) {
	if s == "" {
		return []byte("null"), nil
	}
	return AppendString(nil, string(s)), nil
}

// UnmarshalJSON reads a string; null is the empty string.
func (s *NullString) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*s = ""
		return nil
	}
	return json.Unmarshal(b, (*string)(s))
}

// Int is an integer field that must be a JSON integer: not a string, not a
// fraction, not an exponent. Absent and null leave Set false; an Int not
// Set is left out of what is written (omitzero).
type Int struct {
	Set   bool
	Value int64
}

// IntOf is v, Set unless 0: what a client sends for an option it leaves
// at the server's default when zero.
func IntOf(v int64) Int { return Int{Set: v != 0, Value: v} }

func (n Int) IsZero() bool { return !n.Set }

func (n Int) MarshalJSON() ([]byte, error) { return strconv.AppendInt(nil, n.Value, 10), nil }

func (n *Int) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	for i, c := range b {
		if (c < '0' || c > '9') && !(i == 0 && c == '-' && len(b) > 1) {
			return ErrNotInteger
		}
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return ErrNotInteger
	}
	n.Set, n.Value = true, v
	return nil
}

// ErrNotInteger is Int's refusal of anything but a JSON integer in range.
var ErrNotInteger = errors.New("not an integer in range")

func (r *reader) jsonInt(n *Int) bool {
	v, ok := r.int()
	if ok {
		*n = Int{Set: true, Value: v}
	}
	return ok
}

// ErrorBody is every error body as a client reads it: the code to branch
// on (fenceview's refusal codes), the message for people, and the fields
// some codes add. A refusal's own facts (a held lock's holder...) are
// Conflict's and httpguard.Refusal's.
type ErrorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
	// DocURL is where the code is explained (docs/errors.md).
	DocURL string `json:"docUrl,omitempty"`
	// Field is the body field at fault, of invalid-request and
	// unknown-field.
	Field string `json:"field,omitempty"`
	// ExpiredAt is when a lease-expired lease ended.
	ExpiredAt Time `json:"expiredAt,omitzero"`
	// RetryAfterMs is when to retry an overloaded request.
	RetryAfterMs int64 `json:"retryAfterMs,omitempty"`
	// Hint is the route a not-found path with an unescaped id meant.
	Hint string `json:"hint,omitempty"`
}

// Grant answers an acquire or a renew.
type Grant struct {
	ResourceID string  `json:"resourceId"`
	Holder     string  `json:"holder"`
	HoldCount  int     `json:"holdCount"`
	ExpiresAt  Time    `json:"expiresAt"`
	LeaseMs    int64   `json:"leaseMs"`
	Fencing    Fencing `json:"fencing"`
	// Shared: a shared (read) hold, whose token the read phase's other
	// readers hold too.
	Shared bool `json:"shared,omitempty"`
}

// Fencing is a grant's token envelope.
type Fencing struct {
	Token    int64  `json:"token"`
	Issuer   string `json:"issuer"`
	Scope    string `json:"scope"`
	IssuedAt Time   `json:"issuedAt"`
	// The issuer's Ed25519 signature of "fenceview/v1 <resource> <token>"
	// and the id of the key that made it (signed tokens).
	KeyID     string `json:"keyId,omitempty"`
	Signature string `json:"signature,omitempty"`
	// Shared: a read phase's token (the signed message ends " shared").
	Shared bool `json:"shared,omitempty"`
}

// Released answers a release; its fields are in the order a map's keys
// were, so the bytes are what they were when it was one.
type Released struct {
	HoldCount  int    `json:"holdCount"`
	Released   bool   `json:"released"`
	ResourceID string `json:"resourceId"`
}

// FenceAccepted answers an accepted fenced write (fields as above).
type FenceAccepted struct {
	Accepted       bool   `json:"accepted"`
	IdempotencyKey string `json:"idempotencyKey"`
	Token          int64  `json:"token"`
}

// Lock answers GET /v1/locks/{resource}.
type Lock struct {
	ResourceID  string     `json:"resourceId"`
	Locked      bool       `json:"locked"`
	Holder      NullString `json:"holder"`
	HoldCount   int        `json:"holdCount"`
	Token       int64      `json:"token"`
	ExpiresAt   Time       `json:"expiresAt"`
	RemainingMs int64      `json:"remainingMs"`
	LeaseMs     int64      `json:"leaseMs"`
	Waiters     int        `json:"waiters"`
	// AvailableAt is when a running lock-delay ends; null when none runs.
	AvailableAt Time `json:"availableAt"`
	// Shared: the live holds are shared ones, each listed in Holders
	// (Holder, HoldCount and ExpiresAt are then the first's).
	Shared  bool   `json:"shared,omitempty"`
	Holders []Hold `json:"holders,omitempty"`
}

// Hold is one live shared hold of a lock.
type Hold struct {
	Holder      string `json:"holder"`
	HoldCount   int    `json:"holdCount"`
	ExpiresAt   Time   `json:"expiresAt"`
	RemainingMs int64  `json:"remainingMs"`
}

// Resource is a resource's counters and lock, as listed.
type Resource struct {
	ResourceID      string     `json:"resourceId"`
	HighWaterMark   int64      `json:"highWaterMark"`
	LastToken       int64      `json:"lastToken"`
	Holder          NullString `json:"holder"`
	HoldCount       int        `json:"holdCount"`
	ExpiresAt       Time       `json:"expiresAt"`
	Accepted        int64      `json:"accepted"`
	Rejected        int64      `json:"rejected"`
	LastRejectionAt Time       `json:"lastRejectionAt"`
	CounterAlarm    int64      `json:"counterAlarm"`
	// Lock-delay and the primitives, present only when set: the current
	// grant's lock-delay, when a running one ends, a semaphore's permits (on its slot 0), and
	// an election's flag and leader value.
	LockDelayMs int64   `json:"lockDelayMs,omitempty"`
	AvailableAt *Time   `json:"availableAt,omitempty"`
	Permits     int     `json:"permits,omitempty"`
	Election    bool    `json:"election,omitempty"`
	Value       *string `json:"value,omitempty"`
	// Times, on GET /v1/resources/{resource} only: its recent grants'
	// waits and holds and the acquires waiting now.
	Times *Times `json:"times,omitempty"`
}

// Times is a lock's recent waits and holds.
type Times struct {
	Waiters int       `json:"waiters"`
	Wait    Durations `json:"wait"`
	Hold    Durations `json:"hold"`
}

// Durations is a window of durations in milliseconds (fractions for
// sub-millisecond waits).
type Durations struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50Ms"`
	P99   float64 `json:"p99Ms"`
	Max   float64 `json:"maxMs"`
}

// Rejection is one refused token of GET /v1/rejections.
type Rejection struct {
	ID         int64  `json:"id"`
	ResourceID string `json:"resourceId"`
	Presented  int64  `json:"presented"`
	Required   int64  `json:"required"`
	Reason     string `json:"reason"`
	Source     string `json:"source"`
	Holder     string `json:"holder,omitempty"`
	At         Time   `json:"at"`
}

// Event is an event as the stream (GET /v1/events) sends it: one JSON
// object per message.
type Event struct {
	Seq        int64  `json:"seq"`
	Type       string `json:"type"`
	ResourceID string `json:"resourceId"`
	Token      int64  `json:"token,omitempty"`
	Holder     string `json:"holder,omitempty"`
	Presented  *int64 `json:"presented,omitempty"`
	Required   *int64 `json:"required,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Source     string `json:"source,omitempty"`
	At         Time   `json:"at"`
	// Value: an election's leader value, on its grants and proclaims.
	Value *string `json:"value,omitempty"`
	// LockDelayMs: the lock-delay an expire starts.
	LockDelayMs int64 `json:"lockDelayMs,omitempty"`
	// Permits: a semaphore's new permits, on a permits event (its slot 0).
	Permits int `json:"permits,omitempty"`
	// Access: "read" on the accept or reject of a read.
	Access string `json:"access,omitempty"`
}

// AppendBody appends the JSON of the answers of the hot path (Grant,
// Released, FenceAccepted) as json.Marshal writes it, reporting false for
// any other value.
func AppendBody(dst []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case Grant:
		return v.appendJSON(dst), true
	case Released:
		dst = strconv.AppendInt(append(dst, `{"holdCount":`...), int64(v.HoldCount), 10)
		dst = strconv.AppendBool(append(dst, `,"released":`...), v.Released)
		dst = AppendString(append(dst, `,"resourceId":`...), v.ResourceID)
		return append(dst, '}'), true
	case FenceAccepted:
		dst = strconv.AppendBool(append(dst, `{"accepted":`...), v.Accepted)
		dst = AppendString(append(dst, `,"idempotencyKey":`...), v.IdempotencyKey)
		dst = strconv.AppendInt(append(dst, `,"token":`...), v.Token, 10)
		return append(dst, '}'), true
	case map[string]any:
		return appendFlatMap(dst, v)
	case Appender:
		return v.AppendJSON(dst), true
	}
	return dst, false
}

// Appender is an answer body that writes itself as encoding/json would
// write it, without reflection (a fence's refusal).
type Appender interface {
	AppendJSON(dst []byte) []byte
}

// maxFlatKeys bounds the keys of a map AppendBody writes itself: an error
// body has a handful; more go to encoding/json.
const maxFlatKeys = 16

// appendFlatMap appends m as encoding/json writes it (keys sorted) when
// every value is a string, an integer, a bool, a Time or nil: the bodies
// of refusals. Anything else (a list, a nested object) is left to
// encoding/json, and dst is returned as it came.
func appendFlatMap(dst []byte, m map[string]any) ([]byte, bool) {
	if len(m) > maxFlatKeys {
		return dst, false
	}
	var keyArr [maxFlatKeys]string
	keys := keyArr[:0]
	for k, v := range m {
		switch v.(type) {
		case string, int, int64, bool, Time, nil:
		default:
			return dst, false
		}
		// Insertion sort: a handful of keys, and no allocation.
		i := len(keys)
		keys = append(keys, k)
		for ; i > 0 && keys[i-1] > k; i-- {
			keys[i] = keys[i-1]
		}
		keys[i] = k
	}
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(AppendString(dst, k), ':')
		switch v := m[k].(type) {
		case string:
			dst = AppendString(dst, v)
		case int:
			dst = strconv.AppendInt(dst, int64(v), 10)
		case int64:
			dst = strconv.AppendInt(dst, v, 10)
		case bool:
			dst = strconv.AppendBool(dst, v)
		case Time:
			dst = v.appendJSON(dst)
		case nil:
			dst = append(dst, "null"...)
		}
	}
	return append(dst, '}'), true
}

func (g Grant) appendJSON(dst []byte) []byte {
	dst = AppendString(append(dst, `{"resourceId":`...), g.ResourceID)
	dst = AppendString(append(dst, `,"holder":`...), g.Holder)
	dst = strconv.AppendInt(append(dst, `,"holdCount":`...), int64(g.HoldCount), 10)
	dst = g.ExpiresAt.appendJSON(append(dst, `,"expiresAt":`...))
	dst = strconv.AppendInt(append(dst, `,"leaseMs":`...), g.LeaseMs, 10)
	f := g.Fencing
	dst = strconv.AppendInt(append(dst, `,"fencing":{"token":`...), f.Token, 10)
	dst = AppendString(append(dst, `,"issuer":`...), f.Issuer)
	dst = AppendString(append(dst, `,"scope":`...), f.Scope)
	dst = f.IssuedAt.appendJSON(append(dst, `,"issuedAt":`...))
	if f.KeyID != "" {
		dst = AppendString(append(dst, `,"keyId":`...), f.KeyID)
	}
	if f.Signature != "" {
		dst = AppendString(append(dst, `,"signature":`...), f.Signature)
	}
	if f.Shared {
		dst = append(dst, `,"shared":true`...)
	}
	if g.Shared {
		return append(dst, `},"shared":true}`...)
	}
	return append(dst, "}}"...)
}

// DecodeBody fills out from an answer's body as json.Unmarshal does,
// without reflection for the bodies of the hot path in the server's
// shape.
func DecodeBody(body []byte, out any) error {
	switch v := out.(type) {
	case *Grant:
		if v.decodePlain(body) {
			return nil
		}
		*v = Grant{}
	case *Released:
		if v.decodePlain(body) {
			return nil
		}
		*v = Released{}
	case *FenceAccepted:
		if v.decodePlain(body) {
			return nil
		}
		*v = FenceAccepted{}
	}
	return json.Unmarshal(body, out)
}

var (
	releasedKeys = []string{"holdCount", "released", "resourceId"}
	acceptedKeys = []string{"accepted", "idempotencyKey", "token"}
	grantKeys    = []string{"resourceId", "holder", "holdCount", "expiresAt", "leaseMs", "fencing", "shared"}
	fencingKeys  = []string{"token", "issuer", "scope", "issuedAt", "keyId", "signature", "shared"}
)

func (v *Released) decodePlain(body []byte) bool {
	r := reader{b: body}
	return r.object(func(key []byte) bool {
		switch string(key) {
		case "holdCount":
			return r.intInto(&v.HoldCount)
		case "released":
			return r.bool(&v.Released)
		case "resourceId":
			return r.string(&v.ResourceID)
		}
		return r.other(key, releasedKeys)
	})
}

func (v *FenceAccepted) decodePlain(body []byte) bool {
	r := reader{b: body}
	return r.object(func(key []byte) bool {
		switch string(key) {
		case "accepted":
			return r.bool(&v.Accepted)
		case "idempotencyKey":
			return r.string(&v.IdempotencyKey)
		case "token":
			return r.int64(&v.Token)
		}
		return r.other(key, acceptedKeys)
	})
}

func (g *Grant) decodePlain(body []byte) bool {
	r := reader{b: body}
	return r.object(func(key []byte) bool {
		switch string(key) {
		case "resourceId":
			return r.string(&g.ResourceID)
		case "holder":
			return r.string(&g.Holder)
		case "holdCount":
			return r.intInto(&g.HoldCount)
		case "expiresAt":
			return r.time(&g.ExpiresAt)
		case "leaseMs":
			return r.int64(&g.LeaseMs)
		case "fencing":
			return r.fencing(&g.Fencing)
		case "shared":
			return r.bool(&g.Shared)
		}
		return r.other(key, grantKeys)
	})
}

func (r *reader) fencing(f *Fencing) bool {
	return r.objectValue(func(key []byte) bool {
		switch string(key) {
		case "token":
			return r.int64(&f.Token)
		case "issuer":
			return r.string(&f.Issuer)
		case "scope":
			return r.string(&f.Scope)
		case "issuedAt":
			return r.time(&f.IssuedAt)
		case "keyId":
			return r.string(&f.KeyID)
		case "signature":
			return r.string(&f.Signature)
		case "shared":
			return r.bool(&f.Shared)
		}
		return r.other(key, fencingKeys)
	})
}

// StringOf is s, nil when empty: what a client sends for a field it leaves
// out when empty.
func StringOf(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// FencingOf is t's envelope on the wire.
func FencingOf(t guard.Token) Fencing {
	return Fencing{Token: t.Token, Issuer: t.Issuer, Scope: t.Scope, IssuedAt: Time(t.IssuedAt), KeyID: t.KeyID, Signature: t.Signature, Shared: t.Shared}
}

// GuardToken is the token f carries, as a guard checks it.
func (f Fencing) GuardToken() guard.Token {
	return guard.Token{Token: f.Token, Issuer: f.Issuer, Scope: f.Scope, IssuedAt: time.Time(f.IssuedAt), KeyID: f.KeyID, Signature: f.Signature, Shared: f.Shared}
}
