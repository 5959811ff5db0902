package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/wire"
)

// statuses maps every refusal code that is not the state's refusal to its
// HTTP status; the state's refusals (fenceview.IsRefusalCode) are 409
// Conflict. The HTTP mapping of codes is here and nowhere else.
var statuses = map[string]int{
	fenceview.EINVALID:          http.StatusBadRequest,
	fenceview.EUNKNOWNFIELD:     http.StatusBadRequest,
	fenceview.EINVALIDTOKEN:     http.StatusBadRequest,
	fenceview.ETOOLARGE:         http.StatusRequestEntityTooLarge,
	fenceview.EUNAUTHENTICATED:  http.StatusUnauthorized,
	fenceview.EFORBIDDEN:        http.StatusForbidden,
	fenceview.ENOTFOUND:         http.StatusNotFound,
	fenceview.EMETHODNOTALLOWED: http.StatusMethodNotAllowed,
	fenceview.EOVERLOADED:       http.StatusTooManyRequests,
	fenceview.ELIMIT:            http.StatusTooManyRequests,
	fenceview.EUNAVAILABLE:      http.StatusServiceUnavailable,
	fenceview.EINTERNAL:         http.StatusInternalServerError,
}

// statusOf is the HTTP status of code; an unknown code is a 500.
func statusOf(code string) int {
	if status, ok := statuses[code]; ok {
		return status
	}
	if fenceview.IsRefusalCode(code) {
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}

// Codes lists every refusal code the API answers with, and its status.
func Codes() map[string]int {
	all := map[string]int{}
	for code, status := range statuses {
		all[code] = status
	}
	for _, code := range fenceview.RefusalCodes() {
		all[code] = http.StatusConflict
	}
	return all
}

// DocsErrors is where every code is explained: a refusal's docUrl is this
// page at its code's anchor.
const DocsErrors = "https://github.com/fenceview/fenceview/blob/main/docs/errors.md"

// problem is the body of every refusal the API answers, over the JSON API
// and the RPC stream alike: the code programs branch on, a sentence for
// people, the field at fault, where the code is explained, when to try
// again, and the code's own facts (a lock's holder, a lease's expiry). It
// sets the headers its code calls for itself, whichever way it is
// written.
type problem struct {
	Status       int
	Code         string
	Message      string
	Field        string         // the request field, query parameter or header at fault; "" when none
	RetryAfterMs int64          // when to try again; 0 when the refusal does not say
	Details      map[string]any // the code's own facts, in their wire form
}

// problemOf is the body of err.
func problemOf(err error) *problem {
	code := fenceview.ErrorCode(err)
	p := &problem{Status: statusOf(code), Code: code, Message: fenceview.ErrorMessage(err)}
	if e, ok := err.(*fenceview.Error); ok {
		for k, v := range e.Fields {
			switch k {
			case "field":
				p.Field, _ = v.(string)
			case "retryAfterMs":
				p.RetryAfterMs = retryAfterMs(v)
			case "error", "code", "docUrl":
				// The body's own members are not a refusal's facts.
			default:
				if p.Details == nil {
					p.Details = make(map[string]any, len(e.Fields))
				}
				p.Details[k] = wireValue(v)
			}
		}
	}
	return p
}

// DocURL is where p's code is explained.
func (p *problem) DocURL() string { return DocsErrors + "#" + p.Code }

// SetHeader sets the headers p's code calls for: WWW-Authenticate on a
// 401, Retry-After when p says when to retry (whole seconds, rounded up)
// and on every 503, unless a stage set one already.
func (p *problem) SetHeader(h http.Header) {
	if p.Code == fenceview.EUNAUTHENTICATED {
		h.Set("WWW-Authenticate", `Bearer realm="fenceview"`)
	}
	if h.Get("Retry-After") != "" {
		return
	}
	if p.RetryAfterMs > 0 {
		h.Set("Retry-After", strconv.FormatInt((p.RetryAfterMs+999)/1000, 10))
	} else if p.Code == fenceview.EUNAVAILABLE {
		h.Set("Retry-After", "1")
	}
}

// AppendJSON appends p as one JSON object, its facts beside its own
// members, keys sorted as encoding/json sorts a map's (wire.Appender).
func (p *problem) AppendJSON(dst []byte) []byte {
	m := make(map[string]any, len(p.Details)+5)
	for k, v := range p.Details {
		m[k] = v
	}
	m["code"], m["error"], m["docUrl"] = p.Code, p.Message, p.DocURL()
	if p.Field != "" {
		m["field"] = p.Field
	}
	if p.RetryAfterMs > 0 {
		m["retryAfterMs"] = p.RetryAfterMs
	}
	if out, ok := wire.AppendBody(dst, m); ok {
		return out
	}
	b, err := json.Marshal(m)
	if err != nil {
		return append(dst, `{"code":"internal","error":"internal error"}`...)
	}
	return append(dst, b...)
}

// retryAfterMs is an error's retryAfterMs field as a number, 0 when none.
func retryAfterMs(v any) int64 {
	switch v := v.(type) {
	case int:
		return int64(v)
	case int64:
		return v
	}
	return 0
}
