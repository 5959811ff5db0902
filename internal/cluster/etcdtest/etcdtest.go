// Package etcdtest starts real etcd members in the test process
// (go.etcd.io/etcd/server/v3/embed) on loopback ports, so cluster tests
// need nothing installed.
package etcdtest

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
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
// Each member's config is changed by opts, after the test defaults.
func Start(t testing.TB, n int, opts ...func(*embed.Config)) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	var initial []string
	for i := 0; i < n; i++ {
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("m%d", i)
		cfg.Dir = t.TempDir()
		cfg.LogLevel = "error"
		cfg.LogOutputs = []string{"/dev/null"}
		peer, client := freeURL(t), freeURL(t)
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
	for range c.members {
		if err := <-errs; err != nil {
			t.Fatalf("etcd: %v", err)
		}
	}
	for _, m := range c.members {
		select {
		case <-m.etcd.Server.ReadyNotify():
		case <-time.After(time.Minute):
			t.Fatal("etcd member did not become ready")
		}
	}
	t.Cleanup(c.Close)
	return c
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
	if !m.stopped {
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

// freeURL returns an http URL on a loopback port free at the moment: etcd
// members must know each other's peer URLs before any of them listens.
func freeURL(t testing.TB) url.URL {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return url.URL{Scheme: "http", Host: addr}
}
