package load

import (
	"context"
	"errors"

	"github.com/fenceview/fenceview/client"
)

// GoClient drives a fenceview server through the Go client (package
// client): over HTTP, or with rpc over the multiplexed RPC stream. Next to
// the HTTP driver it shows what the client costs, and with rpc what the
// stream gains.
type GoClient struct {
	Key   string // sent with every call (client.Config.Key) when set
	base  string
	rpc   bool
	c     *client.Client
	setup Setup
}

// NewGoClient returns a driver for the server at base.
func NewGoClient(base string, rpc bool) (*GoClient, error) {
	if _, err := NewHTTP(base); err != nil { // same URL rules
		return nil, err
	}
	return &GoClient{base: base, rpc: rpc}, nil
}

func (g *GoClient) Name() string {
	if g.rpc {
		return "fenceview-rpc"
	}
	return "fenceview-client"
}

func (g *GoClient) Prepare(ctx context.Context, s Setup) error {
	if g.c != nil {
		g.c.Close()
	}
	c, err := client.New(client.Config{URL: g.base, Lease: s.Lease, DisableRPC: !g.rpc, Key: g.Key})
	if err != nil {
		return err
	}
	g.c, g.setup = c, s
	return nil
}

func (g *GoClient) NewClient(id int, holder string) (Client, error) {
	return &goClient{g: g, holder: holder, mutexes: make([]*client.Mutex, len(g.setup.Resources))}, nil
}

func (g *GoClient) Close() error { return CloseOpened(g.c) }

type goClient struct {
	g       *GoClient
	holder  string
	mutexes []*client.Mutex // made on first use
}

func (c *goClient) mutex(r int) *client.Mutex {
	m := c.mutexes[r]
	if m == nil {
		m = c.g.c.Mutex(c.g.setup.Resources[r], c.holder)
		c.mutexes[r] = m
	}
	return m
}

func (c *goClient) Acquire(ctx context.Context, r int) (int64, error) {
	// A fixed lease: the hold is not renewed, as in the other drivers.
	tok, err := c.mutex(r).TryLock(ctx, c.g.setup.Wait, c.g.setup.Lease)
	if errors.Is(err, client.ErrHeld) {
		return 0, ErrBusy
	}
	return tok, statusOf("acquire", err)
}

func (c *goClient) Release(ctx context.Context, r int) error {
	return statusOf("release", c.mutex(r).Unlock(ctx))
}

func (c *goClient) Fence(ctx context.Context, r int, token int64) (bool, error) {
	_, err := c.g.c.Fence(ctx, c.g.setup.Resources[r], token)
	var stale *client.RefusalError
	if errors.As(err, &stale) {
		return false, nil
	}
	return err == nil, statusOf("fence", err)
}

// statusOf turns the client's server errors into StatusError, so that 5xx
// are counted as such.
func statusOf(op string, err error) error {
	var api *client.APIError
	if errors.As(err, &api) {
		return &StatusError{Op: op, Code: api.StatusCode, Body: api.Message}
	}
	return err
}
