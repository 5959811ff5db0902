package httpapi

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/fenceview/fenceview/internal/wire"
)

// The JSON API's busiest bodies without reflection: the acquire, renew,
// release and fence requests and the answers to them. As in the RPC codec,
// a request in the plain shape (one object of the known fields, ASCII
// strings without escapes, integers, JSON whitespace between tokens) is
// parsed here and anything else goes to encoding/json, so odd input gets
// exactly the answer it always got. Fuzz tests hold both directions to
// encoding/json.

// plainBody is a request body with a parser of its plain shape. decodePlain
// reports false, leaving the value zero, when b is not plain.
type plainBody interface {
	decodePlain(b []byte) bool
}

func (req *lockRequest) decodePlain(b []byte) bool {
	*req = lockRequest{}
	p := plainReader{b: b}
	ok := p.object(func(key []byte) bool {
		switch string(key) {
		case "holder":
			v, ok := p.str()
			if !ok {
				return false
			}
			h := string(v)
			req.Holder = &h
		case "leaseMs":
			return p.jsonInt(&req.LeaseMs)
		case "waitMs":
			return p.jsonInt(&req.WaitMs)
		case "lockDelayMs":
			return p.jsonInt(&req.LockDelayMs)
		default:
			return false // unknown or differently cased: encoding/json decides
		}
		return true
	})
	if !ok {
		*req = lockRequest{}
	}
	return ok
}

func (req *fenceRequest) decodePlain(b []byte) bool {
	*req = fenceRequest{}
	p := plainReader{b: b}
	ok := p.object(func(key []byte) bool {
		var dst *string
		switch string(key) {
		case "token":
			return p.jsonInt(&req.Token)
		case "issuer":
			dst = &req.Issuer
		case "scope":
			dst = &req.Scope
		case "holder":
			dst = &req.Holder
		case "source":
			dst = &req.Source
		case "signature":
			dst = &req.Signature
		default:
			return false
		}
		v, ok := p.str()
		*dst = string(v)
		return ok
	})
	if !ok {
		*req = fenceRequest{}
	}
	return ok
}

// plainReader reads a JSON text of the plain shape from b at i.
type plainReader struct {
	b []byte
	i int
}

// object reads the whole of b as one object, calling field with each key
// (the reader then at its value); field reads the value or reports false.
func (p *plainReader) object(field func(key []byte) bool) bool {
	p.space()
	if !p.next('{') {
		return false
	}
	p.space()
	if p.next('}') {
		return p.end()
	}
	for {
		p.space()
		key, ok := p.str()
		if !ok {
			return false
		}
		p.space()
		if !p.next(':') {
			return false
		}
		p.space()
		if !field(key) {
			return false
		}
		p.space()
		switch {
		case p.next(','):
		case p.next('}'):
			return p.end()
		default:
			return false
		}
	}
}

// end reports whether only whitespace is left.
func (p *plainReader) end() bool {
	p.space()
	return p.i == len(p.b)
}

func (p *plainReader) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *plainReader) next(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// str reads a string of printable ASCII without escapes.
func (p *plainReader) str() ([]byte, bool) {
	if !p.next('"') {
		return nil, false
	}
	for j := p.i; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			s := p.b[p.i:j]
			p.i = j + 1
			return s, true
		case c < 0x20 || c == '\\' || c >= utf8.RuneSelf:
			return nil, false
		}
	}
	return nil, false
}

// jsonInt reads an integer of at most 18 digits (so it cannot overflow),
// without fraction or exponent, into n.
func (p *plainReader) jsonInt(n *jsonInt) bool {
	b, j := p.b, p.i
	neg := j < len(b) && b[j] == '-'
	if neg {
		j++
	}
	start := j
	var v int64
	for ; j < len(b) && b[j] >= '0' && b[j] <= '9'; j++ {
		v = v*10 + int64(b[j]-'0')
	}
	digits := j - start
	if digits == 0 || digits > 18 || (b[start] == '0' && digits > 1) {
		return false
	}
	if j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E') {
		return false
	}
	if neg {
		v = -v
	}
	p.i = j
	*n = jsonInt{Set: true, Value: v}
	return true
}

// Answers. The structs keep their json tags: encoding/json writes them the
// same way wherever a body takes the reflective path (the RPC stream).

// releasedBody answers a release; its fields are in the order a map's keys
// were, so the bytes are what they were when it was one.
type releasedBody struct {
	HoldCount  int    `json:"holdCount"`
	Released   bool   `json:"released"`
	ResourceID string `json:"resourceId"`
}

// fenceAcceptedBody answers an accepted fenced write (fields as above).
type fenceAcceptedBody struct {
	Accepted       bool   `json:"accepted"`
	IdempotencyKey string `json:"idempotencyKey"`
	Token          int64  `json:"token"`
}

// appendBody appends the JSON of the answers above as json.Marshal writes
// it, reporting false for any other value.
func appendBody(dst []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case grantBody:
		return v.appendJSON(dst), true
	case releasedBody:
		dst = strconv.AppendInt(append(dst, `{"holdCount":`...), int64(v.HoldCount), 10)
		dst = strconv.AppendBool(append(dst, `,"released":`...), v.Released)
		dst = appendJSONString(append(dst, `,"resourceId":`...), v.ResourceID)
		return append(dst, '}'), true
	case fenceAcceptedBody:
		dst = strconv.AppendBool(append(dst, `{"accepted":`...), v.Accepted)
		dst = appendJSONString(append(dst, `,"idempotencyKey":`...), v.IdempotencyKey)
		dst = strconv.AppendInt(append(dst, `,"token":`...), v.Token, 10)
		return append(dst, '}'), true
	}
	return dst, false
}

func (g grantBody) appendJSON(dst []byte) []byte {
	dst = appendJSONString(append(dst, `{"resourceId":`...), g.ResourceID)
	dst = appendJSONString(append(dst, `,"holder":`...), g.Holder)
	dst = strconv.AppendInt(append(dst, `,"holdCount":`...), int64(g.HoldCount), 10)
	dst = g.ExpiresAt.appendJSON(append(dst, `,"expiresAt":`...))
	dst = strconv.AppendInt(append(dst, `,"leaseMs":`...), g.LeaseMs, 10)
	f := g.Fencing
	dst = strconv.AppendInt(append(dst, `,"fencing":{"token":`...), f.Token, 10)
	dst = appendJSONString(append(dst, `,"issuer":`...), f.Issuer)
	dst = appendJSONString(append(dst, `,"scope":`...), f.Scope)
	dst = f.IssuedAt.appendJSON(append(dst, `,"issuedAt":`...))
	if f.KeyID != "" {
		dst = appendJSONString(append(dst, `,"keyId":`...), f.KeyID)
	}
	if f.Signature != "" {
		dst = appendJSONString(append(dst, `,"signature":`...), f.Signature)
	}
	return append(dst, "}}"...)
}

func (t wireTime) appendJSON(dst []byte) []byte {
	tt := time.Time(t)
	if tt.IsZero() {
		return append(dst, "null"...)
	}
	return append(tt.UTC().AppendFormat(append(dst, '"'), wire.TimeLayout), '"')
}

// jsonSafe is the ASCII encoding/json writes as itself in a string (its
// htmlSafeSet): printable, less the quote, the backslash, <, > and &.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendJSONString appends s quoted as encoding/json quotes it, HTML
// escaping included: <, > and & as \u003c..., invalid UTF-8 as \ufffd,
// U+2028 and U+2029 escaped.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
		} else if r == '\u2028' || r == '\u2029' {
			dst = append(append(dst, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xF])
		} else {
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(dst, s[start:]...), '"')
}
