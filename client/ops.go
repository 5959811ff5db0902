package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/fenceview/fenceview/internal/wire"
)

// op is one operation the client makes of the server: its op on the RPC
// stream and its JSON API route. In RPC mode every op goes over the
// stream; the JSON API carries the same request fields as its body.
type op struct {
	rpc    string // the RPC stream's op
	method string
	kind   string // route /v1/<kind>/<name>[/<action>] ...
	action string
	path   string // ... or this route, without a name (the multi-locks)
	// named: the RPC request carries the name as Name (the primitives'),
	// not as Resource (a lock's).
	named bool
	// idempotent: sending it twice does what sending it once does, so it
	// may be sent again after a 503 with Retry-After, when the server may
	// or may not have done it. Any op is sent again after a 429, which
	// changed nothing.
	idempotent bool
}

var (
	opAcquire       = op{rpc: wire.OpAcquire, method: http.MethodPost, kind: "locks", action: "acquire"}
	opRenew         = op{rpc: wire.OpRenew, method: http.MethodPost, kind: "locks", action: "renew", idempotent: true}
	opRelease       = op{rpc: wire.OpRelease, method: http.MethodPost, kind: "locks", action: "release"}
	opFence         = op{rpc: wire.OpFence, method: http.MethodPost, kind: "fence", idempotent: true}
	opLock          = op{rpc: wire.OpLock, method: http.MethodGet, kind: "locks", idempotent: true}
	opSemaphoreAcq  = op{rpc: wire.OpSemaphoreAcquire, method: http.MethodPost, kind: "semaphores", action: "acquire", named: true}
	opSemaphoreRel  = op{rpc: wire.OpSemaphoreRelease, method: http.MethodPost, kind: "semaphores", action: "release", named: true}
	opSemaphore     = op{rpc: wire.OpSemaphore, method: http.MethodGet, kind: "semaphores", named: true, idempotent: true}
	opAcquireAll    = op{rpc: wire.OpAcquireAll, method: http.MethodPost, path: "/v1/locks/acquire-all", named: true}
	opReleaseAll    = op{rpc: wire.OpReleaseAll, method: http.MethodPost, path: "/v1/locks/release-all", named: true}
	opCampaign      = op{rpc: wire.OpCampaign, method: http.MethodPost, kind: "elections", action: "campaign", named: true}
	opProclaim      = op{rpc: wire.OpProclaim, method: http.MethodPost, kind: "elections", action: "proclaim", named: true, idempotent: true}
	opResign        = op{rpc: wire.OpResign, method: http.MethodPost, kind: "elections", action: "resign", named: true}
	opElectionRenew = op{rpc: wire.OpElectionRenew, method: http.MethodPost, kind: "elections", action: "renew", named: true, idempotent: true}
	opElection      = op{rpc: wire.OpElection, method: http.MethodGet, kind: "elections", named: true, idempotent: true}
)

// exchange makes one call of o on name (a resource, a semaphore's or an
// election's name; "" for the multi-locks) with the request fields req
// (id, op, resource and name left out): over the RPC stream when the
// client uses it and it can be opened, else as a JSON API request whose
// body is req. An error
// answer becomes an *APIError read by r. A shed call is sent again (see
// retrying).
func (c *Client) exchange(ctx context.Context, o op, name string, req wire.Request, out any, r refusal) error {
	return c.retrying(ctx, o.idempotent, func() error {
		if c.rpc != nil {
			if err := c.exchangeRPC(ctx, o, name, req, out, r); err != errUseJSON {
				return err
			}
		}
		u := c.path(o.path)
		if o.path == "" {
			u = c.endpoint(o.kind, name, o.action)
		}
		var body any
		if o.method != http.MethodGet {
			body = json.RawMessage(wire.AppendRequest(nil, &req))
		}
		return c.send(ctx, maxResponse, o.method, u, nil, body, out, r)
	})
}

func (c *Client) exchangeRPC(ctx context.Context, o op, name string, req wire.Request, out any, r refusal) error {
	req.Op = o.rpc
	if o.named {
		req.Name = name
	} else {
		req.Resource = name
	}
	if err := c.life.enter(); err != nil {
		return err
	}
	defer c.life.calls.Done()
	var a wire.Answer
	for attempt := 0; ; attempt++ {
		sess, err := c.rpc.session(ctx, c)
		if err != nil {
			return err
		}
		if a, err = sess.call(ctx, c.life.ctx.Done(), req); err != nil {
			return err
		}
		if attempt > 0 || a.Status != http.StatusServiceUnavailable || !termEnded(a.Body) {
			break
		}
		// The server stopped serving this connection and refused the
		// call without doing it (a service that closed refuses every
		// change): once more, on a new connection.
		sess.fail(errStaleStream)
	}
	if a.Status != http.StatusOK && a.Status != http.StatusCreated {
		return r.decode(a.Status, a.Body, nil)
	}
	if out != nil {
		if err := wire.DecodeBody(a.Body, out); err != nil {
			return fmt.Errorf("fenceview: decoding answer: %w", err)
		}
	}
	return nil
}

// maxAttempts bounds the sends of one call the server sheds, for callers
// whose context has no deadline.
const maxAttempts = 8

// retrying calls once, and again while the server sheds it: after a 429
// overloaded, which changed nothing, and, when idempotent, after a 503
// with a Retry-After (no leader; a term ending under the call). It waits
// between sends for the server's Retry-After, else an exponential backoff,
// plus jitter so that shed clients do not come back together, and gives
// up (with the server's answer) when the wait would pass ctx's deadline.
// A timeout or a broken connection is never sent again here: the server
// may have done the call.
func (c *Client) retrying(ctx context.Context, idempotent bool, once func() error) error {
	for attempt := 0; ; attempt++ {
		err := once()
		var ae *APIError
		if err == nil || attempt+1 >= maxAttempts || !errors.As(err, &ae) {
			return err
		}
		switch {
		case ae.StatusCode == http.StatusTooManyRequests && ae.Code == "overloaded":
		case ae.StatusCode == http.StatusServiceUnavailable && ae.RetryAfter > 0 && idempotent:
		default:
			return err
		}
		wait := ae.RetryAfter
		if wait <= 0 {
			wait = min(retryBase<<attempt, retryCap)
		}
		wait += c.jitter(wait / 2)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return err
		}
		if c.sleep(ctx, wait) != nil {
			return err
		}
	}
}

// The backoff of a shed call whose answer said not when to come back.
const (
	retryBase = 50 * time.Millisecond
	retryCap  = 2 * time.Second
)

// jitterOf is a uniform random duration in [0, d).
func jitterOf(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}

// sleepOn waits d by c's clock, or until ctx ends or c closes.
func (c *Client) sleepOn(ctx context.Context, d time.Duration) error {
	t := c.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.life.ctx.Done():
		return ErrClosed
	}
}
