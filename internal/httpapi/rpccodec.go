package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// The RPC stream's codec without reflection. Requests in the shape every
// client sends (one flat object of the known fields, plain ASCII strings
// without escapes, integers) are parsed here; anything else goes to
// encoding/json, so odd input gets exactly the answer it always got. A
// fuzz test holds the fast path to encoding/json's result.

// decodeRPCRequest fills req from line as json.Unmarshal would.
func decodeRPCRequest(line []byte, req *rpcRequest) error {
	if fastRPCRequest(line, req) {
		return nil
	}
	*req = rpcRequest{}
	return json.Unmarshal(line, req)
}

// fastRPCRequest parses line into req, reporting false (req then holds
// anything) when line is not in the plain shape.
func fastRPCRequest(b []byte, req *rpcRequest) bool {
	*req = rpcRequest{}
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return false
	}
	i := 1
	if b[i] == '}' {
		return i+1 == len(b)
	}
	for {
		key, n, ok := plainString(b, i)
		if !ok || n >= len(b) || b[n] != ':' {
			return false
		}
		i = n + 1
		if i >= len(b) {
			return false
		}
		switch string(key) {
		case "id":
			v, n, ok := plainUint(b, i)
			if !ok {
				return false
			}
			req.ID, i = v, n
		case "leaseMs", "waitMs", "token", "lockDelayMs", "permits", "slot":
			v, n, ok := plainInt(b, i)
			if !ok {
				return false
			}
			i = n
			p := &req.Token
			switch string(key) {
			case "leaseMs":
				p = &req.LeaseMs
			case "waitMs":
				p = &req.WaitMs
			case "lockDelayMs":
				p = &req.LockDelayMs
			case "permits":
				p = &req.Permits
			case "slot":
				p = &req.Slot
			}
			*p = jsonInt{Set: true, Value: v}
		case "resources":
			list, n, ok := plainStrings(b, i)
			if !ok {
				return false
			}
			req.Resources, i = &list, n
		case "name", "candidate", "value":
			v, n, ok := plainString(b, i)
			if !ok {
				return false
			}
			i = n
			s := string(v)
			switch key[0] {
			case 'n':
				req.Name = s
			case 'c':
				req.Candidate = &s
			default:
				req.Value = &s
			}
		case "op", "resource", "holder", "issuer", "scope", "source", "signature", "mode":
			v, n, ok := plainString(b, i)
			if !ok {
				return false
			}
			i = n
			var s string
			if key[0] != 'o' {
				s = string(v)
			}
			switch string(key) {
			case "op":
				req.Op = rpcOp(v)
			case "resource":
				req.Resource = s
			case "holder":
				req.Holder = &s
			case "issuer":
				req.Issuer = s
			case "scope":
				req.Scope = s
			case "source":
				req.Source = s
			case "mode":
				req.Mode = s
			default:
				req.Signature = s
			}
		default:
			return false // unknown or differently cased: encoding/json decides
		}
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return i+1 == len(b)
		default:
			return false
		}
	}
}

// rpcOp returns the op's name without allocating for the known ones.
func rpcOp(v []byte) string {
	for _, op := range [...]string{"acquire", "release", "fence", "renew", "lock"} {
		if string(v) == op {
			return op
		}
	}
	return string(v)
}

// plainString reads a JSON string at b[i] of printable ASCII without
// escapes, returning its contents and the index after it.
func plainString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c < 0x20 || c == '\\' || c >= 0x80:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// plainStrings reads a JSON array of plain strings (as plainString), with
// no space in it, returning a list that is never nil and the index after.
func plainStrings(b []byte, i int) ([]string, int, bool) {
	if i >= len(b) || b[i] != '[' {
		return nil, 0, false
	}
	i++
	list := []string{}
	if i < len(b) && b[i] == ']' {
		return list, i + 1, true
	}
	for {
		v, n, ok := plainString(b, i)
		if !ok || n >= len(b) {
			return nil, 0, false
		}
		list = append(list, string(v))
		switch b[n] {
		case ',':
			i = n + 1
		case ']':
			return list, n + 1, true
		default:
			return nil, 0, false
		}
	}
}

// plainUint reads a JSON integer without sign, fraction or exponent that
// fits in a uint64.
func plainUint(b []byte, i int) (uint64, int, bool) {
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

// plainInt reads a JSON integer, optionally negative, that fits in an int64.
func plainInt(b []byte, i int) (int64, int, bool) {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	k := j
	for k < len(b) && b[k] >= '0' && b[k] <= '9' {
		k++
	}
	if k == j || (b[j] == '0' && k > j+1) {
		return 0, 0, false
	}
	v, err := strconv.ParseInt(string(b[i:k]), 10, 64)
	return v, k, err == nil
}

// appendRPCAnswer appends the answer line json.Marshal(rpcAnswer{...})
// would write. The bodies of the hot path (grants, releases, accepted
// fenced writes, errors) are written here; others go through
// encoding/json.
func appendRPCAnswer(dst []byte, id uint64, status int, body any) []byte {
	if dst == nil {
		dst = make([]byte, 0, 384) // a grant's line, with room for a signature
	}
	start := len(dst)
	dst = append(dst, `{"id":`...)
	dst = strconv.AppendUint(dst, id, 10)
	dst = append(dst, `,"status":`...)
	dst = strconv.AppendInt(dst, int64(status), 10)
	dst = append(dst, `,"body":`...)
	if out, ok := appendFastBody(dst, body); ok {
		return append(out, '}')
	}
	bb, err := json.Marshal(body)
	if err != nil {
		return appendRPCAnswer(dst[:start], id, http.StatusInternalServerError, map[string]any{"error": "internal error"})
	}
	dst = append(dst, bb...)
	return append(dst, '}')
}

// appendFastBody appends what json.Marshal(body) writes, or reports false
// (dst then holds anything after its length) for a body it does not know:
// the JSON API's answers (appendBody) and flat error maps.
func appendFastBody(dst []byte, body any) ([]byte, bool) {
	if out, ok := appendBody(dst, body); ok {
		return out, true
	}
	if m, ok := body.(map[string]any); ok {
		return appendFlatMap(dst, m)
	}
	return dst, false
}

// appendFlatMap writes a map of at most 8 strings, integers and booleans
// (an error body), keys sorted as encoding/json sorts them.
func appendFlatMap(dst []byte, m map[string]any) ([]byte, bool) {
	var arr [8]string
	if len(m) > len(arr) {
		return dst, false
	}
	keys := arr[:0]
	for k := range m {
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
		dst = append(appendJSONString(dst, k), ':')
		switch v := m[k].(type) {
		case string:
			dst = appendJSONString(dst, v)
		case int:
			dst = strconv.AppendInt(dst, int64(v), 10)
		case int64:
			dst = strconv.AppendInt(dst, v, 10)
		case bool:
			dst = strconv.AppendBool(dst, v)
		default:
			return dst, false
		}
	}
	return append(dst, '}'), true
}
