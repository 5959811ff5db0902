package client

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The RPC stream's codec without reflection, for the shapes this client
// and fenceview's server write; anything else goes through encoding/json.

// appendRPCRequest appends what json.Marshal(req) writes.
func appendRPCRequest(dst []byte, req *rpcRequest) ([]byte, error) {
	start := len(dst)
	dst = append(dst, '{')
	sep := func() {
		if len(dst) > start+1 {
			dst = append(dst, ',')
		}
	}
	num := func(key string, v int64) {
		if v != 0 {
			sep()
			dst = strconv.AppendInt(append(dst, key...), v, 10)
		}
	}
	plain := true
	str := func(key, v string) {
		if v == "" || !plain {
			return
		}
		for i := 0; i < len(v); i++ {
			// encoding/json escapes these (HTML-safe by default).
			if c := v[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				plain = false
				return
			}
		}
		sep()
		dst = append(append(append(append(dst, key...), '"'), v...), '"')
	}
	if req.ID != 0 {
		sep()
		dst = strconv.AppendUint(append(dst, `"id":`...), req.ID, 10)
	}
	str(`"op":`, req.Op)
	str(`"resource":`, req.Resource)
	str(`"holder":`, req.Holder)
	num(`"leaseMs":`, req.LeaseMs)
	num(`"waitMs":`, req.WaitMs)
	num(`"lockDelayMs":`, req.LockDelayMs)
	num(`"token":`, req.Token)
	str(`"issuer":`, req.Issuer)
	str(`"scope":`, req.Scope)
	str(`"signature":`, req.Signature)
	str(`"mode":`, req.Mode)
	if !plain {
		b, err := json.Marshal(req)
		return append(dst[:start], b...), err
	}
	return append(dst, '}'), nil
}

// decodeRPCAnswer reads one answer line; Body aliases line.
func decodeRPCAnswer(line []byte, a *rpcAnswer) error {
	if fastRPCAnswer(line, a) {
		return nil
	}
	*a = rpcAnswer{}
	return json.Unmarshal(line, a)
}

// fastRPCAnswer reads the server's own layout:
// {"id":N,"status":S,"body":...}.
func fastRPCAnswer(b []byte, a *rpcAnswer) bool {
	const p1, p2, p3 = `{"id":`, `,"status":`, `,"body":`
	i, ok := skip(b, 0, p1)
	if !ok {
		return false
	}
	id, i, ok := digits(b, i)
	if !ok {
		return false
	}
	if i, ok = skip(b, i, p2); !ok {
		return false
	}
	status, i, ok := digits(b, i)
	if !ok || status > 999 {
		return false
	}
	if i, ok = skip(b, i, p3); !ok || len(b) < i+2 || b[len(b)-1] != '}' {
		return false
	}
	body := b[i : len(b)-1]
	if space(body[0]) || space(body[len(body)-1]) || !(validPlain(body) || json.Valid(body)) {
		return false
	}
	a.ID, a.Status, a.Body = id, int(status), body
	return true
}

// validPlain reports whether b is one JSON value of the compact kind the
// server writes (no spaces, strings without escapes, integers), several
// times faster than json.Valid; false says nothing, json.Valid decides.
func validPlain(b []byte) bool {
	n, ok := plainEnd(b, 0, 0)
	return ok && n == len(b)
}

// plainEnd returns the index after the plain value at b[i].
func plainEnd(b []byte, i, depth int) (int, bool) {
	if i >= len(b) || depth > 32 {
		return 0, false
	}
	switch b[i] {
	case '{', '[':
		end := byte('}')
		if b[i] == '[' {
			end = ']'
		}
		i++
		if i < len(b) && b[i] == end {
			return i + 1, true
		}
		for {
			if end == '}' {
				n, ok := skipScalar(b, i)
				if !ok || b[i] != '"' || n >= len(b) || b[n] != ':' {
					return 0, false
				}
				i = n + 1
			}
			n, ok := plainEnd(b, i, depth+1)
			if !ok || n >= len(b) {
				return 0, false
			}
			switch b[n] {
			case ',':
				i = n + 1
			case end:
				return n + 1, true
			default:
				return 0, false
			}
		}
	}
	return skipScalar(b, i)
}

func skip(b []byte, i int, s string) (int, bool) {
	if len(b)-i < len(s) || string(b[i:i+len(s)]) != s {
		return 0, false
	}
	return i + len(s), true
}

func digits(b []byte, i int) (uint64, int, bool) {
	j := i
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	if j == i || (b[i] == '0' && j > i+1) {
		return 0, 0, false
	}
	v, err := strconv.ParseUint(string(b[i:j]), 10, 64)
	return v, j, err == nil
}

func space(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// Answer bodies without reflection. Each fast reader takes the compact
// shape fenceview's server writes (no spaces, keys in any order, plain
// strings without escapes, integers) and reports false on anything else,
// which then goes through encoding/json from a zero value: the result is
// always json.Unmarshal's (FuzzAnswerBodyDecode holds them equal).

// releaseBody is the part of a release answer the client uses.
type releaseBody struct {
	HoldCount int `json:"holdCount"`
}

// fencedBody is the part of an accepted fence answer the client uses.
type fencedBody struct {
	Token          int64  `json:"token"`
	IdempotencyKey string `json:"idempotencyKey"`
}

// decodeAnswerBody fills out from an answer's body as json.Unmarshal does.
func decodeAnswerBody(body []byte, out any) error {
	switch v := out.(type) {
	case *grantBody:
		if fastGrant(body, v) {
			return nil
		}
		*v = grantBody{}
	case *releaseBody:
		if fastRelease(body, v) {
			return nil
		}
		*v = releaseBody{}
	case *fencedBody:
		if fastFenced(body, v) {
			return nil
		}
		*v = fencedBody{}
	}
	return json.Unmarshal(body, out)
}

var (
	releaseKeys = []string{"holdCount"}
	fencedKeys  = []string{"token", "idempotencyKey"}
	grantKeys   = []string{"resourceId", "holder", "holdCount", "expiresAt", "leaseMs", "fencing"}
	tokenKeys   = []string{"token", "issuer", "scope", "issuedAt", "keyId", "signature"}
)

func fastRelease(body []byte, r *releaseBody) bool {
	return fastObject(body, releaseKeys, func(_ string, b []byte, i int) (int, bool) {
		return fastInt(b, i, &r.HoldCount)
	})
}

func fastFenced(body []byte, f *fencedBody) bool {
	return fastObject(body, fencedKeys, func(key string, b []byte, i int) (int, bool) {
		if key == "token" {
			return fastInt(b, i, &f.Token)
		}
		return fastString(b, i, &f.IdempotencyKey)
	})
}

func fastGrant(body []byte, g *grantBody) bool {
	return fastObject(body, grantKeys, func(key string, b []byte, i int) (int, bool) {
		switch key {
		case "resourceId":
			return fastString(b, i, &g.ResourceID)
		case "holder":
			return fastString(b, i, &g.Holder)
		case "holdCount":
			return fastInt(b, i, &g.HoldCount)
		case "expiresAt":
			return fastTime(b, i, &g.ExpiresAt)
		case "leaseMs":
			return fastInt(b, i, &g.LeaseMs)
		}
		t := &g.Fencing
		return fastObjectAt(b, i, tokenKeys, func(key string, b []byte, i int) (int, bool) {
			switch key {
			case "token":
				return fastInt(b, i, &t.Token)
			case "issuer":
				return fastString(b, i, &t.Issuer)
			case "scope":
				return fastString(b, i, &t.Scope)
			case "issuedAt":
				return fastTime(b, i, &t.IssuedAt)
			case "keyId":
				return fastString(b, i, &t.KeyID)
			}
			return fastString(b, i, &t.Signature)
		})
	})
}

// fastObject reads body, one object, handing each value of a key in keys
// to field (which reads it at b[i] into place, as encoding/json would, and
// returns the index after it). Values of other keys are skipped when they
// are plain scalars. Keys match exactly; one that only matches a field
// case-insensitively (as encoding/json allows) is left to encoding/json.
func fastObject(body []byte, keys []string, field func(key string, b []byte, i int) (int, bool)) bool {
	n, ok := fastObjectAt(body, 0, keys, field)
	return ok && n == len(body)
}

func fastObjectAt(b []byte, i int, keys []string, field func(key string, b []byte, i int) (int, bool)) (int, bool) {
	if i >= len(b) || b[i] != '{' {
		return 0, false
	}
	i++
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, false
		}
		j := i + 1
		for j < len(b) && b[j] != '"' {
			// ASCII keys only: encoding/json folds some non-ASCII
			// letters (the Kelvin sign, the long s) into field names.
			if c := b[j]; c < 0x20 || c >= 0x80 || c == '\\' {
				return 0, false
			}
			j++
		}
		if j+1 >= len(b) || b[j+1] != ':' {
			return 0, false
		}
		key := b[i+1 : j]
		i = j + 2
		known := ""
		for _, k := range keys {
			if string(key) == k {
				known = k
				break
			}
			if len(key) == len(k) && strings.EqualFold(string(key), k) {
				return 0, false
			}
		}
		var ok bool
		if known != "" {
			i, ok = field(known, b, i)
		} else {
			i, ok = skipScalar(b, i)
		}
		if !ok || i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// plainValue returns the contents of the string at b[i] when it has no
// escapes, no control characters and is valid UTF-8: exactly the bytes
// encoding/json would decode it to.
func plainValue(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	ascii := true
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			s := b[i+1 : j]
			return s, j + 1, ascii || utf8.Valid(s)
		case c < 0x20 || c == '\\':
			return nil, 0, false
		case c >= 0x80:
			ascii = false
		}
	}
	return nil, 0, false
}

func fastString(b []byte, i int, dst *string) (int, bool) {
	s, n, ok := plainValue(b, i)
	if ok {
		*dst = string(s)
	}
	return n, ok
}

// fastTime reads a time as time.Time's UnmarshalJSON does, which is what
// encoding/json calls.
func fastTime(b []byte, i int, dst *time.Time) (int, bool) {
	_, n, ok := plainValue(b, i)
	if !ok {
		return 0, false
	}
	var t time.Time
	if t.UnmarshalJSON(b[i:n]) != nil {
		return 0, false
	}
	*dst = t
	return n, true
}

// fastInt reads a JSON integer (no fraction, no exponent) that fits in T.
func fastInt[T int | int64](b []byte, i int, dst *T) (int, bool) {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	k := j
	for k < len(b) && b[k] >= '0' && b[k] <= '9' {
		k++
	}
	if k == j || (b[j] == '0' && k > j+1) {
		return 0, false
	}
	bits := 64
	if _, ok := any(*dst).(int); ok {
		bits = strconv.IntSize
	}
	v, err := strconv.ParseInt(string(b[i:k]), 10, bits)
	if err != nil {
		return 0, false
	}
	*dst = T(v)
	return k, true
}

// skipScalar passes over a plain string, an integer, true, false or null.
func skipScalar(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			if c := b[j]; c == '"' {
				return j + 1, true
			} else if c < 0x20 || c == '\\' {
				return 0, false
			}
		}
		return 0, false
	case 't', 'f', 'n':
		for _, lit := range [...]string{"true", "false", "null"} {
			if n, ok := skip(b, i, lit); ok {
				return n, true
			}
		}
		return 0, false
	}
	var v int64
	return fastInt(b, i, &v)
}
