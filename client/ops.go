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
	"github.com/fenceview/fenceview/internal/wire/op"
)

// exchange makes one call of o on name (a resource, a semaphore's or an
// election's name; "" for the multi-locks) with the request fields req
// (id, op, resource and name left out): over the RPC stream when the
// client uses it and it can be opened, else as a JSON API request whose
// body is req. An error
// answer becomes an *APIError read by r. A shed call is sent again (see
// retrying).
func (c *Client) exchange(ctx context.Context, o *op.Spec, name string, req wire.Request, out any, r refusal) error {
	return c.retrying(ctx, o.Idempotent, func() error {
		if c.rpc != nil {
			if err := c.exchangeRPC(ctx, o, name, req, out, r); err != errUseJSON {
				return err
			}
		}
		u := c.specURL(o, name)
		var body any
		if o.Method != http.MethodGet {
			body = json.RawMessage(wire.AppendRequest(nil, &req))
		}
		return c.send(ctx, maxResponse, o.Method, u, nil, body, out, r)
	})
}

func (c *Client) exchangeRPC(ctx context.Context, o *op.Spec, name string, req wire.Request, out any, r refusal) error {
	req.Op = o.Op
	if o.Target() == "resource" {
		req.Resource = name
	} else {
		req.Name = name // a primitive's ("" for the multi-locks, which name none)
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
