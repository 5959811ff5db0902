package httpguard

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/jsonstr"
)

// Refusal is the 409 body of a refused fenced write, as the fenceview server
// and Middleware both write it; the field names are fenceview's contract.
type Refusal struct {
	Error string `json:"error"`
	// Code is the refusal's code, the same word as Reason (fenceview's
	// refusal codes: every error body carries one).
	Code      string `json:"code"`
	Accepted  bool   `json:"accepted"`
	Reason    string `json:"reason"`
	Presented int64  `json:"presented"`
	Required  int64  `json:"required"`
}

// NewRefusal is the body for a refused decision. A decision without a reason
// is a stale token.
func NewRefusal(d guard.Decision) Refusal {
	r := Refusal{Error: "stale fencing token", Reason: d.Reason, Presented: d.Presented, Required: d.Required}
	switch d.Reason {
	case "":
		r.Reason = guard.ReasonStale
	case guard.ReasonForeignIssuer:
		r.Error = "token from another issuer"
	case guard.ReasonScopeMismatch:
		r.Error = "token issued for another scope"
	case guard.ReasonUnissued:
		r.Error = "token above any this server issued for the resource"
	case guard.ReasonBadSignature:
		r.Error = "missing or invalid token signature"
	case guard.ReasonSuperseded:
		r.Error = "a newer token was issued"
	case guard.ReasonStale:
	default:
		r.Error = "fencing token refused"
	}
	r.Code = r.Reason
	return r
}

// AppendJSON appends r as encoding/json writes it, without reflection:
// a busy resource answers many of these.
func (r Refusal) AppendJSON(dst []byte) []byte {
	dst = jsonstr.Append(append(dst, `{"error":`...), r.Error)
	dst = jsonstr.Append(append(dst, `,"code":`...), r.Code)
	dst = strconv.AppendBool(append(dst, `,"accepted":`...), r.Accepted)
	dst = jsonstr.Append(append(dst, `,"reason":`...), r.Reason)
	dst = strconv.AppendInt(append(dst, `,"presented":`...), r.Presented, 10)
	dst = strconv.AppendInt(append(dst, `,"required":`...), r.Required, 10)
	return append(dst, '}')
}

// SetHeader sets X-Required-Token for a stale token, where it is the token to
// beat; other refusals leave it out (their required is only the current mark).
func (r Refusal) SetHeader(h http.Header) {
	if r.Reason == guard.ReasonStale {
		h.Set(HeaderRequired, strconv.FormatInt(r.Required, 10))
	}
}

// WriteRefusal writes the 409 for a refused decision: X-Required-Token
// (only for a stale token) and the JSON body. Exported for handlers that
// fence their own writes and want to answer the same way the middleware
// does.
func WriteRefusal(w http.ResponseWriter, d guard.Decision) {
	r := NewRefusal(d)
	r.SetHeader(w.Header())
	writeJSON(w, http.StatusConflict, r)
}

// ParseRefusal reads a 409's header and body as a refusal: ok when it is one
// (X-Required-Token, or a JSON body with "accepted": false). The error's
// Resource is left for the caller, who knows it; Required is the header's
// when present, else the body's.
func ParseRefusal(h http.Header, body []byte) (e *guard.RefusalError, ok bool) {
	var b struct {
		Accepted  *bool  `json:"accepted"`
		Reason    string `json:"reason"`
		Presented int64  `json:"presented"`
		Required  int64  `json:"required"`
	}
	jsonRefusal := json.Unmarshal(body, &b) == nil && b.Accepted != nil && !*b.Accepted
	required, headerErr := guard.ParseToken(h.Get(HeaderRequired))
	e = &guard.RefusalError{Reason: b.Reason, Presented: b.Presented, Required: b.Required}
	if headerErr == nil {
		e.Required = required
	}
	if e.Reason == "" {
		e.Reason = guard.ReasonStale
	}
	return e, jsonRefusal || headerErr == nil
}
