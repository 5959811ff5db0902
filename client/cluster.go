package client

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
)

// nodes is the cluster's base URLs, the current one first to try.
type nodes struct {
	bases []*url.URL
	cur   atomic.Int64
}

// parseNodes returns the nodes of base and its peers (Config.Peers), or nil
// for a single server.
func parseNodes(base *url.URL, peers []string) (*nodes, error) {
	if len(peers) == 0 {
		return nil, nil
	}
	n := &nodes{bases: []*url.URL{base}}
	for _, s := range peers {
		u, err := url.Parse(strings.TrimRight(s, "/"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != base.Path {
			return nil, invalid("peers", fmt.Errorf("cluster URL %q: want http(s)://host[:port]%s", s, base.Path))
		}
		n.bases = append(n.bases, u)
	}
	return n, nil
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
