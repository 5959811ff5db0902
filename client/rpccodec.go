package client

import (
	"encoding/json"
	"strconv"
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
	num(`"token":`, req.Token)
	str(`"issuer":`, req.Issuer)
	str(`"scope":`, req.Scope)
	str(`"signature":`, req.Signature)
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
	if space(body[0]) || space(body[len(body)-1]) || !json.Valid(body) {
		return false
	}
	a.ID, a.Status, a.Body = id, int(status), body
	return true
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
