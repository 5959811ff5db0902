package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
)

// The RPC stream (GET /v1/rpc): a client's message holds requests, one
// JSON object per line; the server's holds answers, {"id","status","body"}
// a line, the body being what the JSON API would answer.

// The ops of the RPC stream.
const (
	OpAcquire = "acquire"
	OpRenew   = "renew"
	OpRelease = "release"
	OpFence   = "fence"
	OpLock    = "lock"

	// Semaphores, multi-locks and elections: the JSON API's routes of the same names.
	OpSemaphoreAcquire = "semaphore-acquire"
	OpSemaphoreRelease = "semaphore-release"
	OpSemaphorePermits = "semaphore-permits"
	OpSemaphore        = "semaphore"
	OpAcquireAll       = "acquire-all"
	OpReleaseAll       = "release-all"
	OpCampaign         = "campaign"
	OpProclaim         = "proclaim"
	OpResign           = "resign"
	OpElectionRenew    = "election-renew"
	OpElection         = "election"
)

// Request is one request line. A client's lock and fence calls over HTTP
// send the same object as their body, id, op and resource left out. What
// is unset (zero, nil, an Int not Set) is not written.
type Request struct {
	ID       uint64  `json:"id,omitempty"`
	Op       string  `json:"op,omitempty"`
	Resource string  `json:"resource,omitempty"`
	Holder   *string `json:"holder,omitempty"`
	LeaseMs  Int     `json:"leaseMs,omitzero"`
	WaitMs   Int     `json:"waitMs,omitzero"`
	// LockDelayMs of an acquire (lock-delay).
	LockDelayMs Int    `json:"lockDelayMs,omitzero"`
	Token       Int    `json:"token,omitzero"`
	Issuer      string `json:"issuer,omitempty"`
	Scope       string `json:"scope,omitempty"`
	Source      string `json:"source,omitempty"`
	// Signature of Token, for a server with --require-signatures.
	Signature string `json:"signature,omitempty"`
	Mode      string `json:"mode,omitempty"` // of a fence: "current", or empty for the rule

	// Semaphores, multi-locks and elections: the JSON API's path {name} and body fields.
	Name      string    `json:"name,omitempty"`
	Permits   Int       `json:"permits,omitzero"`
	Slot      Int       `json:"slot,omitzero"`
	Resources *[]string `json:"resources,omitempty"`
	Candidate *string   `json:"candidate,omitempty"`
	Value     *string   `json:"value,omitempty"`

	// Shared asks an acquire for a shared (read) hold.
	Shared bool `json:"shared,omitempty"`
	// Access of a fence: "read", or "write" (the default when empty).
	Access string `json:"access,omitempty"`
}

// Waits reports whether req may wait for a lock: an acquire of any kind
// with waitMs > 0.
func (req *Request) Waits() bool {
	switch req.Op {
	case OpAcquire, OpSemaphoreAcquire, OpAcquireAll, OpCampaign:
		return req.WaitMs.Value > 0
	}
	return false
}

// AppendRequest appends what json.Marshal(req) writes.
func AppendRequest(dst []byte, req *Request) []byte {
	start := len(dst)
	dst = append(dst, '{')
	key := func(k string) {
		if len(dst) > start+1 {
			dst = append(dst, ',')
		}
		dst = append(dst, k...)
	}
	str := func(k, v string) {
		if v != "" {
			key(k)
			dst = AppendString(dst, v)
		}
	}
	ptr := func(k string, v *string) {
		if v != nil {
			key(k)
			dst = AppendString(dst, *v)
		}
	}
	num := func(k string, n Int) {
		if n.Set {
			key(k)
			dst = strconv.AppendInt(dst, n.Value, 10)
		}
	}
	if req.ID != 0 {
		key(`"id":`)
		dst = strconv.AppendUint(dst, req.ID, 10)
	}
	str(`"op":`, req.Op)
	str(`"resource":`, req.Resource)
	ptr(`"holder":`, req.Holder)
	num(`"leaseMs":`, req.LeaseMs)
	num(`"waitMs":`, req.WaitMs)
	num(`"lockDelayMs":`, req.LockDelayMs)
	num(`"token":`, req.Token)
	str(`"issuer":`, req.Issuer)
	str(`"scope":`, req.Scope)
	str(`"source":`, req.Source)
	str(`"signature":`, req.Signature)
	str(`"mode":`, req.Mode)
	str(`"name":`, req.Name)
	num(`"permits":`, req.Permits)
	num(`"slot":`, req.Slot)
	if req.Resources != nil {
		key(`"resources":`)
		if *req.Resources == nil {
			dst = append(dst, "null"...)
		} else {
			dst = append(dst, '[')
			for i, s := range *req.Resources {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = AppendString(dst, s)
			}
			dst = append(dst, ']')
		}
	}
	ptr(`"candidate":`, req.Candidate)
	ptr(`"value":`, req.Value)
	if req.Shared {
		key(`"shared":`)
		dst = append(dst, "true"...)
	}
	str(`"access":`, req.Access)
	return append(dst, '}')
}

// DecodeRequest fills req from line as json.Unmarshal would.
func DecodeRequest(line []byte, req *Request) error {
	if req.decodePlain(line) {
		return nil
	}
	*req = Request{}
	return json.Unmarshal(line, req)
}

// decodePlain reads line into req, reporting false (req then holds
// anything) when line is not in the plain shape. Unknown keys, and keys
// cased otherwise, are left to encoding/json.
func (req *Request) decodePlain(line []byte) bool { return req.DecodePlain(line, nil) }

// DecodePlain reads b into req as a request line is read, reporting false
// (req then holds anything) when b is not in the plain shape or, keys
// given, has a key not among them: the JSON API's lock and fence bodies
// are requests of fewer fields. Whatever is refused is left to
// encoding/json, from a zero value.
func (req *Request) DecodePlain(b []byte, keys []string) bool {
	var present Fields
	return req.decodeKeys(b, keys, &present)
}

// Fields is a set of Request's JSON keys, one bit each, in the order of
// RequestFields: the keys a request line or body named.
type Fields uint32

// RequestFields are Request's JSON keys, in the order of Fields' bits.
var RequestFields = [...]string{"id", "op", "resource", "holder", "leaseMs", "waitMs", "lockDelayMs", "token", "issuer",
	"scope", "source", "signature", "mode", "name", "permits", "slot", "resources", "candidate", "value", "shared", "access"}

// FieldsOf is the set of names, each one of RequestFields.
func FieldsOf(names ...string) Fields {
	var k Fields
	for _, n := range names {
		bit := keyBit([]byte(n))
		if bit == 0 {
			panic("wire: no request key " + n)
		}
		k |= bit
	}
	return k
}

// Names lists the keys of k in RequestFields' order.
func (k Fields) Names() []string {
	var out []string
	for i, n := range RequestFields {
		if k&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// keyBit is the bit of key, 0 when it is none of Request's (exactly: a
// key encoding/json would match by case alone is not one).
func keyBit(key []byte) Fields {
	for i, n := range RequestFields {
		if string(key) == n {
			return 1 << i
		}
	}
	return 0
}

// DecodeRequestFields is DecodeRequest that also reports the keys line
// names (present) and the first key that is none of Request's (unknown),
// so a caller can refuse what its op does not define. The keys are read
// even when the request is not (err: a value of the wrong type).
//
// It is stricter than encoding/json, naming the field at fault (a
// *FieldError): a string that is not valid UTF-8 is refused rather than
// read with U+FFFD in place of its bytes, and an integer field that is
// not one names itself. (The fast path reads only valid UTF-8 and plain
// integers.)
func DecodeRequestFields(line []byte, req *Request) (present Fields, unknown string, err error) {
	if req.decodeKeys(line, nil, &present) {
		return present, "", nil
	}
	*req = Request{}
	present, unknown = scanKeys(line)
	err = json.Unmarshal(line, req)
	var cerr error
	switch {
	case err == nil:
		cerr = CheckText(line, nil)
	case errors.Is(err, ErrNotInteger):
		cerr = CheckText(line, isIntField)
	}
	if cerr != nil {
		err = cerr
	}
	return present, unknown, err
}

// intFields are Request's integer keys, read by Int.
var intFields = FieldsOf("leaseMs", "waitMs", "lockDelayMs", "token", "permits", "slot")

// isIntField reports whether path is one of intFields (a key of the line
// itself, not of a value nested in it).
func isIntField(path string) bool { return keyBit([]byte(path))&intFields != 0 }

// Envelope is what a request line says it is, read apart from the rest of
// the line: its op and the lock it names. A line that cannot be decoded
// whole is still authorized by these before it is refused, as a JSON API
// request is authorized by its route before its body is read.
type Envelope struct {
	Op, Resource string
}

// Scan reads line's op and resource, as far as line is a JSON object;
// keys are matched exactly, and what cannot be read is left empty.
func (e *Envelope) Scan(line []byte) {
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return
	}
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return
		}
		var value json.RawMessage
		if dec.Decode(&value) != nil {
			return
		}
		switch key {
		case "op":
			json.Unmarshal(value, &e.Op)
		case "resource":
			json.Unmarshal(value, &e.Resource)
		}
	}
}

// scanKeys reads the keys of the object line, in order, with
// encoding/json: the slow path's. What is not an object, or not JSON,
// reports none (encoding/json's error then says why).
func scanKeys(line []byte) (present Fields, unknown string) {
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0, ""
	}
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		var value json.RawMessage
		if err != nil || !ok || dec.Decode(&value) != nil {
			return 0, ""
		}
		bit := keyBit([]byte(key))
		if bit == 0 && unknown == "" {
			unknown = key
		}
		present |= bit
	}
	return present, unknown
}

// decodeKeys is DecodePlain, adding the keys it reads to present.
func (req *Request) decodeKeys(b []byte, keys []string, present *Fields) bool {
	*req = Request{}
	r := reader{b: b}
	return r.object(func(key []byte) bool {
		if keys != nil && !among(key, keys) {
			return false
		}
		*present |= keyBit(key)
		switch string(key) {
		case "id":
			return r.uint64(&req.ID)
		case "op":
			v, ok := r.str()
			req.Op = opName(v)
			return ok
		case "resource":
			return r.string(&req.Resource)
		case "holder":
			return r.stringPtr(&req.Holder)
		case "leaseMs":
			return r.jsonInt(&req.LeaseMs)
		case "waitMs":
			return r.jsonInt(&req.WaitMs)
		case "lockDelayMs":
			return r.jsonInt(&req.LockDelayMs)
		case "token":
			return r.jsonInt(&req.Token)
		case "issuer":
			return r.string(&req.Issuer)
		case "scope":
			return r.string(&req.Scope)
		case "source":
			return r.string(&req.Source)
		case "signature":
			return r.string(&req.Signature)
		case "mode":
			return r.string(&req.Mode)
		case "name":
			return r.string(&req.Name)
		case "permits":
			return r.jsonInt(&req.Permits)
		case "slot":
			return r.jsonInt(&req.Slot)
		case "resources":
			var list []string
			if !r.strings(&list) {
				return false
			}
			req.Resources = &list
			return true
		case "candidate":
			return r.stringPtr(&req.Candidate)
		case "value":
			return r.stringPtr(&req.Value)
		case "shared":
			return r.bool(&req.Shared)
		case "access":
			return r.string(&req.Access)
		}
		return false
	})
}

func among(key []byte, keys []string) bool {
	for _, k := range keys {
		if string(key) == k {
			return true
		}
	}
	return false
}

func (r *reader) stringPtr(dst **string) bool {
	var s string
	if !r.string(&s) {
		return false
	}
	*dst = &s
	return true
}

// opName returns the op's name without allocating for the busiest ones.
func opName(v []byte) string {
	for _, op := range [...]string{OpAcquire, OpRelease, OpFence, OpRenew, OpLock} {
		if string(v) == op {
			return op
		}
	}
	return string(v)
}

// Answer is one answer line as a client reads it; Body is the JSON API's
// answer.
type Answer struct {
	ID     uint64          `json:"id"`
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

// AppendAnswer appends the answer line json.Marshal writes for
// {"id":id,"status":status,"body":body}. The bodies of the hot path
// (AppendBody's and flat error maps) are written without reflection;
// a body encoding/json cannot write becomes the internal-error answer.
func AppendAnswer(dst []byte, id uint64, status int, body any) []byte {
	if dst == nil {
		dst = make([]byte, 0, 384) // a grant's line, with room for a signature
	}
	start := len(dst)
	dst = append(dst, `{"id":`...)
	dst = strconv.AppendUint(dst, id, 10)
	dst = append(dst, `,"status":`...)
	dst = strconv.AppendInt(dst, int64(status), 10)
	dst = append(dst, `,"body":`...)
	if out, ok := AppendBody(dst, body); ok {
		return append(out, '}')
	}
	bb, err := json.Marshal(body)
	if err != nil {
		return AppendAnswer(dst[:start], id, http.StatusInternalServerError, map[string]any{"error": "internal error"})
	}
	dst = append(dst, bb...)
	return append(dst, '}')
}

// DecodeAnswer reads one answer line; Body aliases line.
func DecodeAnswer(line []byte, a *Answer) error {
	if a.decodePlain(line) {
		return nil
	}
	*a = Answer{}
	return json.Unmarshal(line, a)
}

// decodePlain reads the server's own layout, {"id":N,"status":S,"body":...}.
func (a *Answer) decodePlain(b []byte) bool {
	r := reader{b: b}
	var id, status uint64
	if !r.lit(`{"id":`) || !r.uint64(&id) || !r.lit(`,"status":`) || !r.uint64(&status) || status > 999 ||
		!r.lit(`,"body":`) || len(b) < r.i+2 || b[len(b)-1] != '}' {
		return false
	}
	body := b[r.i : len(b)-1]
	if isSpace(body[0]) || isSpace(body[len(body)-1]) || !(validPlain(body) || json.Valid(body)) {
		return false
	}
	a.ID, a.Status, a.Body = id, int(status), body
	return true
}

// Lines calls fn with each non-blank line of msg, in order, until fn
// returns false.
func Lines(msg []byte, fn func(line []byte) bool) {
	for len(msg) > 0 {
		var line []byte
		if i := bytes.IndexByte(msg, '\n'); i >= 0 {
			line, msg = msg[:i], msg[i+1:]
		} else {
			line, msg = msg, nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !fn(line) {
			return
		}
	}
}
