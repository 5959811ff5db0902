package httpapi

import (
	"context"
	"math"
	"net"
	"net/http"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/httpguard"
	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/httpapi/request"
	"github.com/fenceview/fenceview/internal/wire"
)

type lockRequest struct {
	Holder  *string  `json:"holder"`
	LeaseMs wire.Int `json:"leaseMs"`
	WaitMs  wire.Int `json:"waitMs"`
	// LockDelayMs of an acquire (lock-delay); renew and
	// release take none and ignore it.
	LockDelayMs wire.Int `json:"lockDelayMs"`
	// Shared asks an acquire for a shared (read) hold.
	Shared bool `json:"shared"`
}

// resourceOf is the request's path resource, authorized by the pipeline
// (authorized): valid and within the caller's prefixes.
func resourceOf(r *http.Request) string { return r.PathValue("resource") }

// lockRequestOf is the lock request a request line or body carries.
func lockRequestOf(req *wire.Request) lockRequest {
	return lockRequest{Holder: req.Holder, LeaseMs: req.LeaseMs, WaitMs: req.WaitMs, LockDelayMs: req.LockDelayMs, Shared: req.Shared}
}

// validate is what the wire adds to an acquire's, renewal's or release's
// checks: the fields it needs are there (fields the op does not take were
// refused when it was read). The service validates the rest, once
// (fenceview.AcquireRequest.Validate, fenceview.ValidateLock).
func (req lockRequest) validate() error {
	if err := required("holder", req.Holder); err != nil {
		return err
	}
	if err := validateLease(req.LeaseMs); err != nil {
		return err
	}
	return validateWait(req.WaitMs)
}

// millis is an integer field of milliseconds as a duration (0 when
// absent). One too large for a duration saturates, so the service's
// validation refuses it instead of a wrapped value.
func millis(n wire.Int) time.Duration {
	const most = math.MaxInt64 / int64(time.Millisecond)
	return time.Duration(min(max(n.Value, -most), most)) * time.Millisecond
}

// The lock operations, shared by the JSON API and the RPC stream. Each
// answers with a status and a body, errors included.

func (s *Server) acquire(ctx context.Context, resource string, req lockRequest) (any, error) {
	start := time.Now()
	g, err := s.Service.Acquire(ctx, acquireRequestOf(resource, req))
	return s.acquired(ctx, start, g, err)
}

func acquireRequestOf(resource string, req lockRequest) fenceview.AcquireRequest {
	// An absent lease is 0: the default, or a re-entrant grant's current one.
	return fenceview.AcquireRequest{ResourceID: resource, Holder: *req.Holder, Lease: millis(req.LeaseMs),
		Wait: millis(req.WaitMs), LockDelay: millis(req.LockDelayMs), Shared: req.Shared}
}

// acquired answers an acquire asked for at start.
func (s *Server) acquired(ctx context.Context, start time.Time, g fenceview.Grant, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	s.observeGrant(fenceview.KindLock, start)
	return grantWire(g), nil
}

func (s *Server) renew(ctx context.Context, resource string, req lockRequest) (any, error) {
	g, err := s.Service.Renew(ctx, resource, *req.Holder, millis(req.LeaseMs))
	return s.renewed(ctx, g, err)
}

func (s *Server) renewed(ctx context.Context, g fenceview.Grant, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return grantWire(g), nil
}

func (s *Server) release(ctx context.Context, resource string, req lockRequest) (any, error) {
	left, err := s.Service.Release(ctx, resource, *req.Holder)
	return s.released(ctx, resource, left, err)
}

func (s *Server) released(ctx context.Context, resource string, left int, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return wire.Released{ResourceID: resource, HoldCount: left, Released: true}, nil
}

// The same operations answered through done once durable, by a service
// that can (thenService): the RPC stream's requests that never wait.

func (s *Server) acquireThen(ts thenService, ctx context.Context, resource string, req lockRequest, done answerer) {
	start := time.Now()
	ts.AcquireThen(ctx, acquireRequestOf(resource, req), func(g fenceview.Grant, err error) { done.answer(s.acquired(ctx, start, g, err)) })
}

func (s *Server) renewThen(ts thenService, ctx context.Context, resource string, req lockRequest, done answerer) {
	ts.RenewThen(ctx, resource, *req.Holder, millis(req.LeaseMs), func(g fenceview.Grant, err error) { done.answer(s.renewed(ctx, g, err)) })
}

func (s *Server) releaseThen(ts thenService, ctx context.Context, resource string, req lockRequest, done answerer) {
	ts.ReleaseThen(ctx, resource, *req.Holder, func(left int, err error) { done.answer(s.released(ctx, resource, left, err)) })
}

func (s *Server) handleExpire(w http.ResponseWriter, r *http.Request) (any, error) {
	resource := resourceOf(r)
	if err := s.Service.ForceExpire(r.Context(), resource); err != nil {
		return nil, err
	}
	return map[string]any{"resourceId": resource, "expired": true}, nil
}

// handleReset raises a resource's token counter to a floor (admin): the
// deliberate answer to a counter alarm.
func (s *Server) handleReset(w http.ResponseWriter, r *http.Request) (any, error) {
	var req struct {
		Floor wire.Int `json:"floor"`
	}
	return s.changeCounter(w, r, &req, &req.Floor, "floor", "reset", `field "floor" (a positive integer) is required`, s.Service.ResetCounter)
}

// handleRecover sets a poisoned or exhausted resource's counter and mark
// back to a token the admin names (admin; see fenceview.LockService.Recover).
func (s *Server) handleRecover(w http.ResponseWriter, r *http.Request) (any, error) {
	var req struct {
		Token wire.Int `json:"token"`
	}
	return s.changeCounter(w, r, &req, &req.Token, "token", "recovered",
		`field "token" is required: the counter to start from, at least the highest token in use (the next grant takes token+1)`, s.Service.Recover)
}

// changeCounter is an admin's change to a resource's token counter: body
// decoded into req, whose field n (named field; required, else missing)
// apply takes;
// the answer says done and where the counter now stands.
func (s *Server) changeCounter(w http.ResponseWriter, r *http.Request, req any, n *wire.Int, field, done, missing string,
	apply func(ctx context.Context, resourceID string, n int64) (fenceview.Resource, error)) (any, error) {
	resource := resourceOf(r)
	if err := decode(w, r, req, request.MaxBody, false); err != nil {
		return nil, err
	}
	if !n.Set {
		return nil, fenceview.FieldErrorf(fenceview.EINVALID, field, "%s", missing)
	}
	res, err := apply(r.Context(), resource, n.Value)
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"resourceId": resource, done: true, "lastToken": res.LastToken, "highWaterMark": res.HighWaterMark,
		"nextToken": fenceview.NextToken(res),
	}, nil
}

// lockState answers GET /v1/locks/{resource} and the RPC stream's lock.
func (s *Server) lockState(ctx context.Context, resource string) (any, error) {
	ls, err := s.Service.Lock(resource)
	if err != nil {
		return nil, err
	}
	return lockWire(ls), nil
}

func lockWire(ls fenceview.LockState) wire.Lock {
	l := wire.Lock{
		ResourceID: ls.ResourceID, Locked: ls.Locked, Holder: wire.NullString(ls.Holder), HoldCount: ls.HoldCount,
		Token: ls.LastToken, ExpiresAt: wire.Time(ls.ExpiresAt), RemainingMs: ls.Remaining.Milliseconds(),
		LeaseMs: ls.LeaseMs, Waiters: ls.Waiters, AvailableAt: wire.Time(ls.AvailableAt), Shared: ls.Shared,
	}
	for _, h := range ls.Holders {
		l.Holders = append(l.Holders, wire.Hold{Holder: h.Holder, HoldCount: h.HoldCount, ExpiresAt: wire.Time(h.ExpiresAt), RemainingMs: h.Remaining.Milliseconds()})
	}
	return l
}

type fenceRequest struct {
	Token  wire.Int
	Issuer string
	Scope  string
	Holder string
	Source string
	origin string  // api:<host> or rpc:<host>: the source when auth is off and none is given
	header *string // X-Fencing-Token, when given
	// Signature of the token: the JSON "signature" or X-Fencing-Signature.
	Signature string
	sigHeader *string
	// Mode: the JSON "mode" or X-Fencing-Mode (fenceview.FenceModeCurrent).
	Mode       string
	modeHeader *string
	// Access: the JSON "access" or X-Fencing-Access (fenceview.AccessRead).
	Access       string
	accessHeader *string
}

// fenceRequestOf is the fence a request line or body carries.
func fenceRequestOf(req *wire.Request) fenceRequest {
	fr := fenceRequest{Token: req.Token, Issuer: req.Issuer, Scope: req.Scope, Source: req.Source, Signature: req.Signature, Mode: req.Mode, Access: req.Access}
	if req.Holder != nil {
		fr.Holder = *req.Holder
	}
	return fr
}

// fenceOp serves a fence: the body's or line's fields, and over the JSON
// API its X-Fencing-* headers.
func (s *Server) fenceOp(ctx context.Context, c *opCall) (any, error) {
	req := fenceRequestOf(&c.req)
	req.origin = c.origin
	if c.http != nil {
		if err := req.readHeaders(c.http.Header); err != nil {
			return nil, err
		}
		req.origin = "api:" + clientHost(c.http)
	}
	return s.fence(ctx, c.req.Resource, req)
}

// readHeaders takes the token, signature and mode headers of a fence: one
// of each at most.
func (req *fenceRequest) readHeaders(h http.Header) error {
	if hv := h.Values(httpguard.HeaderToken); len(hv) > 0 {
		if len(hv) > 1 {
			return fenceview.FieldErrorf(fenceview.EINVALIDTOKEN, httpguard.HeaderToken,
				"%d %s headers: send one (a positive decimal integer)", len(hv), httpguard.HeaderToken)
		}
		req.header = &hv[0]
	}
	if hv := h.Values(httpguard.HeaderSignature); len(hv) > 0 {
		if len(hv) > 1 {
			return errTwoSignatures
		}
		req.sigHeader = &hv[0]
	}
	if hv := h.Values(httpguard.HeaderMode); len(hv) > 0 {
		if len(hv) > 1 {
			return fenceview.FieldErrorf(fenceview.EINVALID, httpguard.HeaderMode, "one %s header at most", httpguard.HeaderMode)
		}
		req.modeHeader = &hv[0]
	}
	if hv := h.Values(httpguard.HeaderAccess); len(hv) > 0 {
		if len(hv) > 1 {
			return fenceview.Errorf(fenceview.EINVALID, "one %s header at most", httpguard.HeaderAccess)
		}
		req.accessHeader = &hv[0]
	}
	return nil
}

// fence decides a fenced write presented to the server's guard.
func (s *Server) fence(ctx context.Context, resource string, req fenceRequest) (any, error) {
	f, err := s.fenceOf(ctx, resource, req)
	if err != nil {
		return nil, err
	}
	d, err := s.Service.Fence(ctx, f)
	return s.fenced(ctx, resource, d, err)
}

// fenceOf is the fence a request asks for, attributed; the service
// validates it (fenceview.Fence.Validate).
func (s *Server) fenceOf(ctx context.Context, resource string, req fenceRequest) (fenceview.Fence, error) {
	mode, err := chosen(req.Mode, req.modeHeader, httpguard.HeaderMode)
	if err != nil {
		return fenceview.Fence{}, err
	}
	if s.FenceMode == fenceview.FenceModeCurrent && (mode == "" || mode == fenceview.FenceModeMark) {
		// On a server in mode current every fence is in mode current, as
		// its operator asked; a mode of neither kind is left to be refused.
		mode = fenceview.FenceModeCurrent
	}
	access, err := chosen(req.Access, req.accessHeader, httpguard.HeaderAccess)
	if err != nil {
		return fenceview.Fence{}, err
	}
	f, err := req.fence(resource)
	if err == nil {
		f.Source, err = attribute(ctx, req.origin, req.Source)
	}
	f.Mode, f.Access = mode, access
	return f, err
}

// chosen is a fence's option given in its body, in its header, or in both
// when they agree; the service checks the value.
func chosen(body string, header *string, name string) (string, error) {
	switch {
	case header == nil:
		return body, nil
	case *header == "":
		return "", fenceview.FieldErrorf(fenceview.EINVALID, name, "%s is empty: give a value or leave the header out", name)
	case body != "" && body != *header:
		return "", fenceview.FieldErrorf(fenceview.EINVALID, name, "%s header and body differ", name)
	}
	return *header, nil
}

// fenced answers a fence's decision.
func (s *Server) fenced(ctx context.Context, resource string, d guard.Decision, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	if !d.Accepted {
		return httpguard.NewRefusal(d), nil
	}
	return wire.FenceAccepted{Accepted: true, Token: d.Presented, IdempotencyKey: guard.IdempotencyKey(resource, d.Presented)}, nil
}

// fenceThen is fenceOp over the RPC stream, answered through done.
func (s *Server) fenceThen(ts thenService, ctx context.Context, c *opCall, done answerer) {
	req := fenceRequestOf(&c.req)
	req.origin = c.origin
	resource := c.req.Resource
	f, err := s.fenceOf(ctx, resource, req)
	if err != nil {
		done.answer(nil, err)
		return
	}
	ts.FenceThen(ctx, f, func(d guard.Decision, err error) { done.answer(s.fenced(ctx, resource, d, err)) })
}

var errMissingToken = fenceview.Errorf(fenceview.EINVALIDTOKEN,
	"missing or invalid fencing token: send one X-Fencing-Token header (a positive decimal integer) or \"token\" (a positive JSON integer) in the body")

// fence takes the token from the header, the body, or both when they agree.
func (req fenceRequest) fence(resource string) (fenceview.Fence, error) {
	var token int64
	if req.header != nil {
		t, err := guard.ParseToken(*req.header)
		if err != nil {
			return fenceview.Fence{}, fenceview.FieldErrorf(fenceview.EINVALIDTOKEN, httpguard.HeaderToken,
				"invalid fencing token: %s must be a positive decimal integer, nothing else", httpguard.HeaderToken)
		}
		token = t
	}
	if req.Token.Set {
		if req.Token.Value <= 0 {
			return fenceview.Fence{}, fenceview.FieldErrorf(fenceview.EINVALIDTOKEN, "token",
				`invalid fencing token: "token" must be a positive JSON integer (or send one %s header)`, httpguard.HeaderToken)
		}
		if token != 0 && token != req.Token.Value {
			return fenceview.Fence{}, fenceview.Errorf(fenceview.EINVALIDTOKEN, "X-Fencing-Token header and body token differ: send one, or the same in both")
		}
		token = req.Token.Value
	}
	if token == 0 {
		return fenceview.Fence{}, errMissingToken
	}
	sig, err := req.signature()
	if err != nil {
		return fenceview.Fence{}, err
	}
	for _, f := range []struct {
		name, v string
		max     int
	}{{"issuer", req.Issuer, fenceview.MaxEnvelopeLen}, {"scope", req.Scope, fenceview.MaxEnvelopeLen}, {"source", req.Source, fenceview.MaxSourceLen}} {
		if len(f.v) > f.max {
			return fenceview.Fence{}, fenceview.FieldErrorf(fenceview.EINVALID, f.name, "%s must be at most %d bytes", f.name, f.max)
		}
	}
	return fenceview.Fence{
		ResourceID: resource,
		Token:      guard.Token{Token: token, Issuer: req.Issuer, Scope: req.Scope, Signature: sig},
		Holder:     req.Holder,
		Source:     req.Source,
	}, nil
}

func clientHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

type decisionsRequest struct {
	Decisions *[]struct {
		ResourceID string   `json:"resourceId"`
		Token      wire.Int `json:"token"`
		Accepted   *bool    `json:"accepted"`
		Required   wire.Int `json:"required"`
		Reason     string   `json:"reason"`
		Source     string   `json:"source"`
		At         string   `json:"at"`
		Signature  string   `json:"signature"`
		Access     string   `json:"access"`
	} `json:"decisions"`
}

func (s *Server) handleDecisions(w http.ResponseWriter, r *http.Request) (any, error) {
	var req decisionsRequest
	if err := decode(w, r, &req, request.MaxReportBody, false); err != nil {
		return nil, err
	}
	if req.Decisions == nil {
		return nil, fenceview.Errorf(fenceview.EINVALID, `field "decisions" (an array) is required`)
	}
	if len(*req.Decisions) > fenceview.MaxDecisions {
		return nil, fenceview.Errorf(fenceview.ETOOLARGE, "at most %d decisions per request", fenceview.MaxDecisions)
	}
	reports := make([]fenceview.Report, 0, len(*req.Decisions))
	for i, d := range *req.Decisions {
		if !d.Token.Set || d.Accepted == nil {
			return nil, fenceview.Errorf(fenceview.EINVALID, "decisions[%d]: token and accepted are required", i)
		}
		if err := seeResource(r.Context(), d.ResourceID); err != nil {
			return nil, err
		}
		if d.Source == "" { // the contract requires it, auth on or off
			return nil, fenceview.Errorf(fenceview.EINVALID, "decisions[%d]: source is required", i)
		}
		source, err := attribute(r.Context(), "", d.Source)
		if err != nil {
			return nil, fenceview.Errorf(fenceview.EINVALID, "decisions[%d]: %s", i, fenceview.ErrorMessage(err))
		}
		rep := fenceview.Report{ResourceID: d.ResourceID, Token: d.Token.Value, Accepted: *d.Accepted,
			Required: d.Required.Value, Reason: d.Reason, Source: source, Signature: d.Signature, Access: d.Access}
		if len(d.Signature) > maxSignatureLen {
			return nil, fenceview.Errorf(fenceview.EINVALID, "decisions[%d]: signature over %d bytes", i, maxSignatureLen)
		}
		if d.At != "" {
			at, err := time.Parse(time.RFC3339Nano, d.At)
			if err != nil {
				return nil, fenceview.Errorf(fenceview.EINVALID, "decisions[%d]: at must be an RFC 3339 time", i)
			}
			rep.At = at.UTC()
		}
		reports = append(reports, rep)
	}
	n, err := s.Service.Report(r.Context(), reports)
	if err != nil {
		return nil, err
	}
	return map[string]any{"recorded": n}, nil
}

// resourceState answers GET /v1/resources/{resource}: the resource with
// its lock's recent times.
func (s *Server) resourceState(ctx context.Context, resource string) (any, error) {
	res, err := s.Service.Resource(resource)
	if err != nil {
		return nil, err
	}
	body := resourceWire(res)
	body.Times = s.timesWire(resource)
	return body, nil
}

func (s *Server) handleRejections(w http.ResponseWriter, r *http.Request) (any, error) {
	f, err := request.RejectionFilter(r.URL.Query())
	if err == nil && f.ResourceID != "" {
		err = seeResource(r.Context(), f.ResourceID)
	}
	if err != nil {
		return nil, err
	}
	f.Prefixes = auth.FromContext(r.Context()).Resources
	events, err := s.History.Rejections(r.Context(), f)
	if err != nil {
		return nil, err
	}
	out := make([]wire.Rejection, 0, len(events))
	for _, e := range events {
		out = append(out, wire.Rejection{ID: e.Seq, ResourceID: e.ResourceID, Presented: e.Presented, Required: e.Required,
			Reason: e.Reason, Source: e.Source, Holder: e.Holder, At: wire.Time(e.At)})
	}
	var next any
	if len(events) == f.Limit {
		next = fenceview.CursorOf(events[len(events)-1]).String()
	}
	return map[string]any{"rejections": out, "next": next}, nil
}

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	if err := s.History.Ping(r.Context()); err != nil {
		s.Logger.Error("health check failed", "err", err)
		WriteError(w, &fenceview.Error{Code: fenceview.EUNAVAILABLE, Message: "database unavailable", Fields: map[string]any{"status": "unavailable"}})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
}
