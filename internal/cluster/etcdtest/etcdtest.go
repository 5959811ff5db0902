// Package etcdtest starts real etcd members in the test process
// (go.etcd.io/etcd/server/v3/embed) on loopback ports, so cluster tests
// need nothing installed.
package etcdtest

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"

	"github.com/fenceview/fenceview/internal/loopport"
)

// Cluster is a running etcd cluster of one or more members.
type Cluster struct {
	t       testing.TB
	members []*member
}

type member struct {
	cfg     *embed.Config
	etcd    *embed.Etcd
	stopped bool
}

// Start starts an etcd cluster of n members and stops it when the test ends.
// Each member's config is changed by opts, after the test defaults. Members
// must know each other's peer URLs before any listens, so their ports are
// picked up front; if another test binds one first, the cluster starts
// again on new ports.
func Start(t testing.TB, n int, opts ...func(*embed.Config)) *Cluster {
	t.Helper()
	for attempt := 1; ; attempt++ {
		c, err := start(t, n, opts)
		if err == nil {
			t.Cleanup(c.Close)
			return c
		}
		c.Close()
		if attempt < 5 && loopport.InUse(err) {
			continue
		}
		t.Fatalf("etcd: %v", err)
	}
}

func start(t testing.TB, n int, opts []func(*embed.Config)) (*Cluster, error) {
	c := &Cluster{t: t}
	var initial []string
	for i := 0; i < n; i++ {
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("m%d", i)
		cfg.Dir = t.TempDir()
		cfg.LogLevel = "error"
		cfg.LogOutputs = []string{"/dev/null"}
		peer, err := loopURL()
		if err != nil {
			return c, err
		}
		client, err := loopURL()
		if err != nil {
			return c, err
		}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
		// Elections in tens of milliseconds, so a lost member is noticed quickly.
		cfg.TickMs, cfg.ElectionMs = 20, 200
		// Keep MVCC history short, as an operator would, so the event log's
		// watchers meet compaction in tests too.
		cfg.AutoCompactionMode, cfg.AutoCompactionRetention = "revision", "5000"
		for _, o := range opts {
			o(cfg)
		}
		initial = append(initial, cfg.Name+"="+peer.String())
		c.members = append(c.members, &member{cfg: cfg})
	}
	for _, m := range c.members {
		m.cfg.InitialCluster = strings.Join(initial, ",")
		m.cfg.InitialClusterToken = "fenceview-test"
	}
	errs := make(chan error, n)
	for _, m := range c.members {
		go func(m *member) {
			e, err := embed.StartEtcd(m.cfg)
			m.etcd = e
			errs <- err
		}(m)
	}
	var first error
	for range c.members {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return c, first
	}
	for _, m := range c.members {
		select {
		case <-m.etcd.Server.ReadyNotify():
		case <-time.After(time.Minute):
			return c, errors.New("an etcd member did not become ready")
		}
	}
	return c, nil
}

// DefaultTiming gives members etcd's own heartbeat and election timeout
// (100 ms, 1 s), as a cluster left at its defaults has, instead of the
// tests' quicker ones.
func DefaultTiming(cfg *embed.Config) { cfg.TickMs, cfg.ElectionMs = 100, 1000 }

// Endpoints are the client URLs of the members still running.
func (c *Cluster) Endpoints() []string {
	var out []string
	for _, m := range c.members {
		if !m.stopped {
			out = append(out, m.cfg.AdvertiseClientUrls[0].String())
		}
	}
	return out
}

// AllEndpoints are the client URLs of every member, running or not.
func (c *Cluster) AllEndpoints() []string {
	var out []string
	for _, m := range c.members {
		out = append(out, m.cfg.AdvertiseClientUrls[0].String())
	}
	return out
}

// StopMember stops member i, as a crash would (its data dir stays).
func (c *Cluster) StopMember(i int) {
	m := c.members[i]
	if !m.stopped && m.etcd != nil {
		m.etcd.Close()
		m.stopped = true
	}
}

// Close stops every member.
func (c *Cluster) Close() {
	for i := range c.members {
		c.StopMember(i)
	}
}

// loopURL is an http URL on a loopback port that was free a moment ago.
func loopURL() (url.URL, error) {
	addr, err := loopport.Pick()
	return url.URL{Scheme: "http", Host: addr}, err
}
