package client

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
)

// WithURLs adds the other nodes of a fenceview cluster, tried in turn when
// the current one cannot be reached: a call whose connection could not be
// made (nothing was sent) is sent at once to the next node, and after any
// other failure the next call starts there. Every node answers every route
// alike, so they are interchangeable; they must share baseURL's path
// prefix. The RPC stream (WithRPC) stays on baseURL.
func WithURLs(urls ...string) Option {
	return func(c *Client) { c.more = append(c.more, urls...) }
}

// nodes is the cluster's base URLs, the current one first to try.
type nodes struct {
	bases []*url.URL
	cur   atomic.Int64
}

func (c *Client) parseNodes() error {
	if len(c.more) == 0 {
		return nil
	}
	c.nodes = &nodes{bases: []*url.URL{c.base}}
	for _, s := range c.more {
		u, err := url.Parse(strings.TrimRight(s, "/"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != c.base.Path {
			return invalid(fmt.Errorf("cluster URL %q: want http(s)://host[:port]%s", s, c.base.Path))
		}
		c.nodes.bases = append(c.nodes.bases, u)
	}
	return nil
}

// at is u sent to the current node.
func (c *Client) at(u *url.URL) *url.URL {
	if c.nodes == nil {
		return u
	}
	b := c.nodes.bases[int(c.nodes.cur.Load())%len(c.nodes.bases)]
	v := *u
	v.Scheme, v.Host = b.Scheme, b.Host
	return &v
}

// failed moves on after attempt failed with err, and reports whether the
// request may go to the next node now: only when it was certainly not sent.
func (c *Client) failed(attempt int, err error) bool {
	if c.nodes == nil {
		return false
	}
	old := c.nodes.cur.Load()
	c.nodes.cur.CompareAndSwap(old, (old+1)%int64(len(c.nodes.bases)))
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" && attempt+1 < len(c.nodes.bases)
}
