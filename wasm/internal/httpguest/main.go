//go:build wasip1

// Command httpguest is guard-http.wasm: the guard as an http-wasm handler
// (https://http-wasm.io), the middleware plugin ABI of Traefik and Dapr. It
// imports http_handler and exports handle_request and handle_response.
//
// Its guest config is the JSON {"keys": <the body of GET /v1/signing-keys>,
// "writes": [methods], "resourceHeader": name}; a config it cannot use
// panics in _initialize, so the host cannot start it. A request whose
// method is a write must carry X-Fencing-Token, X-Fencing-Signature and the
// resource header, and the signature must be a trusted key's for exactly
// that resource and token, of an exclusive grant; otherwise the module
// answers with the server's status, JSON body and code and the request goes
// no further. Other requests pass unchecked.
//
// Hosts pool instances, each with its own memory, so the module keeps no
// marks (a pooled instance would answer from its own, stale, memory): it
// proves the token was granted, and the backend, or the server's fence,
// compares it with the resource's mark. It keeps its config and a bounded
// cache of verified batch roots. docs/wasm-abi.md documents it.
package main

import (
	"strconv"
	"unsafe"

	"github.com/fenceview/fenceview/guard/ledger"
	"github.com/fenceview/fenceview/wasm/internal/b64url"
	"github.com/fenceview/fenceview/wasm/internal/flatjson"
)

// The http_handler ABI (http-wasm-abi), the functions this module uses.
//
//go:wasmimport http_handler get_config
func getConfig(buf unsafe.Pointer, limit uint32) uint32

//go:wasmimport http_handler log
func hostLog(level int32, msg unsafe.Pointer, n uint32)

//go:wasmimport http_handler get_method
func getMethod(buf unsafe.Pointer, limit uint32) uint32

//go:wasmimport http_handler get_header_values
func getHeaderValues(kind uint32, name unsafe.Pointer, nameLen uint32, buf unsafe.Pointer, limit uint32) uint64

//go:wasmimport http_handler set_header_value
func setHeaderValue(kind uint32, name unsafe.Pointer, nameLen uint32, value unsafe.Pointer, valueLen uint32)

//go:wasmimport http_handler write_body
func writeBody(kind uint32, body unsafe.Pointer, n uint32)

//go:wasmimport http_handler set_status_code
func setStatusCode(code uint32)

const (
	kindRequest  = 0 // header and body kinds
	kindResponse = 1
	logError     = 2
)

func main() {}

// Bounds on what the module reads from the host.
const (
	maxConfig = 1 << 20
	maxHeader = 8 << 10 // all values of one header: far above any valid token, id or carrier
)

const (
	headerToken     = "X-Fencing-Token"
	headerSignature = "X-Fencing-Signature"
)

// config is what the guest config says; keys are prepared once per
// instance (in WebAssembly each is a table of its point's multiples).
type config struct {
	keys           ledger.Keys
	writes         []string
	resourceHeader string
}

var cfg = mustConfig()

func mustConfig() *config {
	var raw []byte
	buf := make([]byte, 4096)
	if n := getConfig(unsafe.Pointer(&buf[0]), uint32(len(buf))); n <= uint32(len(buf)) {
		raw = buf[:n]
	} else if n <= maxConfig {
		raw = make([]byte, n)
		raw = raw[:getConfig(unsafe.Pointer(&raw[0]), n)]
	} else {
		fail("the guest config is over " + strconv.Itoa(maxConfig) + " bytes")
	}
	c, err := parseConfig(raw)
	if err != "" {
		fail("guest config: " + err)
	}
	return c
}

// fail logs why the module cannot start, then stops it: a panic in
// _initialize fails the instantiation.
func fail(msg string) {
	msg = "fenceview guard-http.wasm: " + msg
	hostLog(logError, unsafe.Pointer(unsafe.StringData(msg)), uint32(len(msg)))
	panic(msg)
}

// parseConfig reads the guest config, or says what is wrong with it.
func parseConfig(b []byte) (*config, string) {
	c := &config{writes: []string{"POST", "PUT", "PATCH", "DELETE"}, resourceHeader: "X-Resource-Id"}
	var keys, writes []byte
	header := c.resourceHeader
	if err := flatjson.DecodeStrict(b, []flatjson.Field{
		{Name: "keys", Raw: &keys}, {Name: "writes", Raw: &writes}, {Name: "resourceHeader", Str: &header},
	}); err != nil {
		return nil, err.Error()
	}
	if keys == nil || string(keys) == "null" {
		return nil, `"keys" is required: the body of the server's GET /v1/signing-keys`
	}
	if msg := c.trust(keys); msg != "" {
		return nil, msg
	}
	if writes != nil && string(writes) != "null" {
		c.writes = nil
		err := flatjson.Array(writes, func(e []byte) error {
			m, err := flatjson.String(e)
			if err != nil || !isToken(m) || len(m) > 32 || len(c.writes) >= 32 {
				return errBadMethod
			}
			c.writes = append(c.writes, m)
			return nil
		})
		if err != nil || len(c.writes) == 0 {
			return nil, `"writes": want 1 to 32 HTTP methods`
		}
	}
	if !isToken(header) || len(header) > 64 {
		return nil, `"resourceHeader": want an HTTP header name`
	}
	c.resourceHeader = header
	return c, ""
}

type configError string

func (e configError) Error() string { return string(e) }

const errBadMethod = configError("bad method")

// trust reads the signing keys' body: every key must be a well-formed
// Ed25519 key (a guard must not trust a list it cannot read), 1 to 16.
func (c *config) trust(body []byte) string {
	var list []byte
	if err := flatjson.Decode(body, []flatjson.Field{{Name: "keys", Raw: &list}}); err != nil {
		return `"keys": want the body of GET /v1/signing-keys: ` + err.Error()
	}
	msg := ""
	err := flatjson.Array(list, func(e []byte) error {
		var id, alg, pub string
		if err := flatjson.Decode(e, []flatjson.Field{
			{Name: "keyId", Str: &id}, {Name: "alg", Str: &alg}, {Name: "publicKey", Str: &pub},
		}); err != nil {
			return err
		}
		key := b64url.Decode(pub, ledger.PublicKeySize)
		if alg != "Ed25519" || key == nil {
			msg = "signing key " + strconv.Quote(id) + " is not an Ed25519 public key"
			return configError(msg)
		}
		if err := c.keys.Trust(key); err != nil {
			msg = "more than " + strconv.Itoa(ledger.MaxTrustedKeys) + " signing keys"
			return configError(msg)
		}
		return nil
	})
	switch {
	case msg != "":
		return `"keys": ` + msg
	case err != nil:
		return `"keys": want the body of GET /v1/signing-keys: ` + err.Error()
	case c.keys.Len() == 0:
		return `"keys": no signing keys`
	}
	return ""
}

// isToken reports whether s is an HTTP token (a method, a header name).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '!' || c == '#' || c == '$' || c == '%' || c == '&' || c == '\'' || c == '*' ||
			c == '+' || c == '-' || c == '.' || c == '^' || c == '_' || c == '`' || c == '|' || c == '~') {
			return false
		}
	}
	return true
}

// scratch receives what the host writes: the method and header values.
var scratch [maxHeader]byte

//go:wasmexport handle_request
func handleRequest() int64 {
	n := getMethod(unsafe.Pointer(&scratch[0]), uint32(len(scratch)))
	if n > uint32(len(scratch)) || !cfg.isWrite(scratch[:n]) {
		return 1 // not a write: on to the next handler
	}
	token, ok := onlyValue(headerToken)
	tok, tokOK := parseToken(token)
	sigs, _ := values(headerSignature) // one too long to read is no carrier: refused below
	if !ok || !tokOK || sigs > 1 {
		return refuse(400, invalidToken)
	}
	id, ok := onlyValue(cfg.resourceHeader)
	if !ok || ledger.ValidateResourceID(id) != nil {
		return refuse(400, invalidRequest)
	}
	var raw []byte
	if sigs == 1 {
		sig, _ := onlyValue(headerSignature)
		raw = decodeCarrier(sig)
	}
	switch ledger.ModeOf(&cfg.keys, id, tok, raw, false) {
	case ledger.Exclusive:
		return 1
	case ledger.Shared:
		return refuse(409, refusal(ledger.ReasonSharedToken, "fencing token refused", tok))
	}
	return refuse(409, refusal(ledger.ReasonBadSignature, "missing or invalid token signature", tok))
}

//go:wasmexport handle_response
func handleResponse(reqCtx, isError int32) {}

func (c *config) isWrite(method []byte) bool {
	for _, m := range c.writes {
		if m == string(method) {
			return true
		}
	}
	return false
}

// values reads the values of a request header into scratch: their count,
// and false when they do not fit.
func values(name string) (count uint32, fit bool) {
	cl := getHeaderValues(kindRequest, unsafe.Pointer(unsafe.StringData(name)), uint32(len(name)),
		unsafe.Pointer(&scratch[0]), uint32(len(scratch)))
	return uint32(cl >> 32), uint32(cl) <= uint32(len(scratch))
}

// onlyValue is the value of a header sent exactly once (a copy: scratch
// is overwritten by the next read).
func onlyValue(name string) (string, bool) {
	count, fit := values(name)
	if count != 1 || !fit {
		return "", false
	}
	v := scratch[:]
	for i, c := range v {
		if c == 0 {
			v = v[:i]
			break
		}
	}
	return string(v), true
}

// parseToken is guard.ParseToken: a positive decimal integer of at most 19
// digits that fits an int64, nothing else.
func parseToken(s string) (int64, bool) {
	if s == "" || len(s) > 19 {
		return 0, false
	}
	var u uint64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		u = u*10 + uint64(s[i]-'0') // 19 digits fit a uint64
	}
	if u == 0 || u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

// decodeCarrier is guard.DecodeCarrier: the canonical base64url text of a
// 64-byte signature or of a batch carrier, else nil.
func decodeCarrier(s string) []byte {
	n := len(s) * 6 / 8
	if !ledger.IsCarrierSize(n) {
		return nil
	}
	return b64url.Decode(s, n)
}

// The bodies of the refusals that are not a decision, as the server and
// guard/httpguard write them.
const (
	invalidToken   = `{"error":"missing or invalid fencing token: send one X-Fencing-Token header (a positive decimal integer) and at most one X-Fencing-Signature","code":"invalid-token"}`
	invalidRequest = `{"error":"missing or invalid resource id: send one X-Resource-Id header naming the resource (1 to 255 bytes, printable)","code":"invalid-request"}`
)

// refusal is the body of a refused decision, as httpguard.Refusal's
// AppendJSON writes it; the module keeps no marks, so required is 0.
func refusal(reason, msg string, token int64) string {
	b := make([]byte, 0, 160)
	b = append(b, `{"error":"`...)
	b = append(b, msg...)
	b = append(b, `","code":"`...)
	b = append(b, reason...)
	b = append(b, `","accepted":false,"reason":"`...)
	b = append(b, reason...)
	b = append(b, `","presented":`...)
	b = strconv.AppendInt(b, token, 10)
	b = append(b, `,"required":0}`...)
	return string(b)
}

// refuse answers the request itself: it does not reach the next handler.
// The header goes first: a host may send the status line at once (Go's
// net/http host does).
func refuse(status uint32, body string) int64 {
	const name, value = "Content-Type", "application/json"
	setHeaderValue(kindResponse, unsafe.Pointer(unsafe.StringData(name)), uint32(len(name)),
		unsafe.Pointer(unsafe.StringData(value)), uint32(len(value)))
	setStatusCode(status)
	body += "\n"
	writeBody(kindResponse, unsafe.Pointer(unsafe.StringData(body)), uint32(len(body)))
	return 0
}
