//go:build !race || racecluster

package main

import (
	"testing"
	"time"

	"github.com/fenceview/fenceview/internal/cluster/etcdtest"
)

// In cluster mode the fence's mode reaches the leader: per request (header
// or body) through any node, the follower's forwarding included, and per
// server (--fence-mode current), which cluster mode wires on its own.
func TestClusterFenceModeCurrent(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	node := func(prefix, mode string) *testServer {
		return startServer(t, realClock, func(m *Main) {
			m.Etcd, m.EtcdPrefix, m.ElectionTTL, m.FenceMode = joinList(etcd.Endpoints()), prefix, time.Second, mode
		})
	}
	perRequest := []*testServer{node("/"+t.Name()+"/a/", "mark"), node("/"+t.Name()+"/a/", "mark")}
	perServer := node("/"+t.Name()+"/b/", "current")
	for _, nodes := range [][]*testServer{perRequest, {perServer}} {
		n := nodes[0]
		for _, step := range []struct {
			path   string
			holder string
		}{{"acquire", "a"}, {"release", "a"}, {"acquire", "b"}} {
			if r := retry503Header(t, n.URL()+"/v1/locks/r/"+step.path, map[string]any{"holder": step.holder}); r.Status != 200 {
				t.Fatalf("%s by %s: %d %s", step.path, step.holder, r.Status, r.Raw)
			}
		}
		t2 := int64(2)
		for i, n := range nodes {
			for _, r := range []response{
				retry503Header(t, n.URL()+"/v1/fence/r", map[string]any{"token": 1, "mode": "current"}),
				retry503Header(t, n.URL()+"/v1/fence/r", nil, "X-Fencing-Token", "1", "X-Fencing-Mode", "current"),
			} {
				if r.Status != 409 || r.Body["reason"] != "superseded" || r.num("required") != t2 {
					t.Fatalf("node %d: token 1 in mode current after token 2: %d %s", i, r.Status, r.Raw)
				}
			}
			if r := retry503Header(t, n.URL()+"/v1/fence/r", nil, "X-Fencing-Token", "9", "X-Fencing-Mode", "strict"); r.Status != 400 {
				t.Fatalf("node %d: mode strict: %d %s", i, r.Status, r.Raw)
			}
		}
		r := retry503Header(t, n.URL()+"/v1/fence/r", nil, "X-Fencing-Token", "1")
		if want := map[bool]int{true: 409, false: 200}[len(nodes) == 1]; r.Status != want {
			t.Fatalf("token 1 without a mode, server mode current %v: %d %s, want %d", len(nodes) == 1, r.Status, r.Raw, want)
		}
	}
}

// retry503Header is retry503 with request headers: a cluster answers 503
// with Retry-After until it has a leader.
func retry503Header(t *testing.T, url string, body any, header ...string) response {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		r := doRequest(t, "POST", url, body, header...)
		if r.Status != 503 || r.Header.Get("Retry-After") == "" || time.Now().After(deadline) {
			return r
		}
		time.Sleep(20 * time.Millisecond)
	}
}
