package client

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/httpguard"
	"github.com/fenceview/fenceview/internal/wire"
)

// refusal is what a call knows to read its error answers: what it named
// and, for a server that sends no codes, what a 409 of it means.
type refusal struct {
	resource string // the lock, semaphore or election the typed errors name
	asked    int    // the permits a semaphore acquire asked for
	// conflict is the code of a 409 from a server without codes, when the
	// answer's fields do not tell (not-held for a renew, not-owner for a
	// release, not-leader for an election's proclaim, resign or renew).
	// Empty: an acquire's refusals, told apart by their fields.
	conflict string
	fence    bool  // a fence: a 409 is a refused token
	token    int64 // the token a fence presented
}

// errorBody is every member an error answer may carry.
type errorBody struct {
	Error        string          `json:"error"`
	Code         string          `json:"code"`
	Field        string          `json:"field"`
	Holder       string          `json:"holder"`
	ExpiresAt    wire.Time       `json:"expiresAt"`
	AvailableAt  wire.Time       `json:"availableAt"`
	ExpiredAt    wire.Time       `json:"expiredAt"`
	Permits      int             `json:"permits"`
	Required     int64           `json:"required"`
	Reason       string          `json:"reason"`
	RetryAfterMs int64           `json:"retryAfterMs"`
	Held         []wire.HeldLock `json:"held"`
	Leader       *wire.Leader    `json:"leader"`
}

// decode turns an error answer (status, body and, over HTTP, headers)
// into an *APIError chosen by its code. Nothing reads the English
// message: without a code, the status decides, and for a 409 the call's
// kind and the answer's fields.
func (r refusal) decode(status int, raw []byte, h http.Header) *APIError {
	var b errorBody
	if json.Unmarshal(raw, &b) != nil {
		b = errorBody{}
	}
	msg := b.Error
	if msg == "" {
		msg = strings.TrimSpace(string(raw))
		if len(msg) > 200 {
			msg = msg[:200]
		}
	}
	e := &APIError{StatusCode: status, Code: b.Code, Message: msg, Field: b.Field, Holder: b.Holder,
		ExpiresAt: time.Time(b.ExpiresAt), AvailableAt: time.Time(b.AvailableAt), ExpiredAt: time.Time(b.ExpiredAt),
		Permits: b.Permits, Required: b.Required, RetryAfter: retryAfter(b.RetryAfterMs, h)}
	if e.Code == "" {
		e.Code = r.implied(status, &b)
	}
	e.detail = r.detail(e, &b, h)
	return e
}

// implied is the code of an answer without one.
func (r refusal) implied(status int, b *errorBody) string {
	if status != http.StatusConflict {
		return statusCodes[status]
	}
	switch {
	case r.fence:
		if b.Reason != "" {
			return b.Reason
		}
		return guard.ReasonStale
	case r.conflict != "":
		return r.conflict
	case !time.Time(b.AvailableAt).IsZero():
		return "lock-delay"
	case b.Permits > 0 && b.Permits != r.asked:
		return "permits-mismatch"
	case b.Permits > 0:
		return "no-permit"
	}
	return "lock-held"
}

// detail is the refusal's own typed error, nil for those without one.
func (r refusal) detail(e *APIError, b *errorBody, h http.Header) error {
	if r.fence && codeFamily(e.Code) == ErrTokenRefused {
		f := &RefusalError{Resource: r.resource, Reason: e.Code, Presented: r.token, Required: b.Required}
		if t, err := guard.ParseToken(h.Get(httpguard.HeaderRequired)); err == nil && f.Required == 0 {
			f.Required = t
		}
		return f
	}
	switch e.Code {
	case "lock-held":
		switch {
		case b.Leader != nil:
			return &LeaderError{Election: r.resource, Leader: leaderOf(*b.Leader)}
		case len(b.Held) > 0:
			l := &LocksHeldError{}
			for _, x := range b.Held {
				l.Held = append(l.Held, HeldError{Resource: x.ResourceID, Holder: string(x.Holder), ExpiresAt: time.Time(x.ExpiresAt)})
			}
			return l
		}
		return &HeldError{Resource: r.resource, Holder: b.Holder, ExpiresAt: time.Time(b.ExpiresAt)}
	case "lock-delay":
		return &LockDelayError{Resource: r.resource, AvailableAt: time.Time(b.AvailableAt)}
	case "no-permit":
		return &NoPermitError{Semaphore: r.resource, Permits: b.Permits}
	case "permits-mismatch":
		return &PermitsMismatchError{Semaphore: r.resource, Permits: b.Permits, Asked: r.asked}
	}
	return nil
}

// maxRetryAfter bounds what a server may ask a client to wait.
const maxRetryAfter = time.Minute

// retryAfter is the answer's retryAfterMs, else its Retry-After header
// (whole seconds), bounded; 0 when neither says.
func retryAfter(ms int64, h http.Header) time.Duration {
	d := time.Duration(0)
	if ms > 0 {
		d = time.Duration(min(ms, maxRetryAfter.Milliseconds())) * time.Millisecond
	} else if s, err := strconv.ParseInt(h.Get("Retry-After"), 10, 64); err == nil && s > 0 {
		d = time.Duration(min(s, int64(maxRetryAfter/time.Second))) * time.Second
	}
	return d
}
