//go:build !race || racecluster

package cluster_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/fenceview/fenceview/internal/cluster"
	"github.com/fenceview/fenceview/internal/cluster/etcdtest"
	"github.com/fenceview/fenceview/internal/server"
	"github.com/fenceview/fenceview/internal/servertest"
)

// GET /v1/cluster names the nodes and their internal URLs: with auth on
// it needs a credential that may read, at the leader and at a follower.
func TestClusterEndpointNeedsViewer(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	nodes := startNodesWith(t, etcd.Endpoints(), 2, server.Config{AdminToken: adminToken})
	leader := leaderOf(t, nodes)
	made := callAs(t, adminToken, "POST", leader.url()+"/v1/auth/keys", map[string]any{"name": "v", "role": "viewer"})
	viewer, _ := made.Body["secret"].(string)
	if viewer == "" {
		t.Fatalf("creating a viewer key: %d %v", made.Status, made.Body)
	}
	for _, n := range nodes {
		servertest.Eventually(t, "the node knows the viewer key", func() bool {
			_, err := n.srv.Credentials.Authenticate(viewer)
			return err == nil
		})
		if a := call(t, "GET", n.url()+"/v1/cluster", nil); a.Status != 401 || a.Body["error"] == nil || strings.Contains(fmt.Sprint(a.Body), leader.self().ID) {
			t.Fatalf("%s: /v1/cluster without a credential: %d %v", n.self().ID, a.Status, a.Body)
		}
		if a := callAs(t, viewer+"x", "GET", n.url()+"/v1/cluster", nil); a.Status != 401 {
			t.Fatalf("%s: /v1/cluster with a wrong key: %d %v", n.self().ID, a.Status, a.Body)
		}
		for _, cred := range []string{viewer, adminToken} {
			a := callAs(t, cred, "GET", n.url()+"/v1/cluster", nil)
			if leaderOf, _ := a.Body["leader"].(map[string]any); a.Status != 200 || leaderOf["id"] != leader.self().ID {
				t.Fatalf("%s: /v1/cluster as %.8s: %d %v", n.self().ID, cred, a.Status, a.Body)
			}
		}
	}
}

// Two nodes that disagree on the leader never bounce a request, even when
// the client names the loop guard in its Connection header (which makes a
// proxy drop the header it names). The node here believes a leader that
// itself believes the node leads: it is a campaign in the real etcd, and
// answers as a follower would, 503 for a request already forwarded.
func TestLoopGuardSurvivesConnectionHeader(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	prefix := "/" + t.Name() + "/"
	var hops atomic.Int64
	var guard atomic.Value
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hops.Add(1)
		guard.Store(r.Header.Get("X-Fenceview-Forwarded-By"))
		if r.Header.Get("X-Fenceview-Forwarded-By") != "" {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":"the leader changed; retry"}`)
			return
		}
		w.WriteHeader(http.StatusLoopDetected) // would forward back: the loop
	}))
	t.Cleanup(other.Close)

	cli, err := clientv3.New(clientv3.Config{Endpoints: etcd.Endpoints(), DialTimeout: hangGuard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(60))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	me, _ := json.Marshal(cluster.Member{ID: "node-other", URL: other.URL})
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := concurrency.NewElection(sess, prefix+"election").Campaign(ctx, string(me)); err != nil {
		t.Fatal(err)
	}

	n := startNodeWith(t, server.Config{DBPath: filepath.Join(t.TempDir(), "n.db"), Cluster: server.ClusterConfig{Etcd: etcd.Endpoints(), Prefix: prefix}})
	servertest.Eventually(t, "the node follows the other leader", func() bool {
		l := n.srv.Node.Leader()
		return l != nil && l.ID == "node-other"
	})
	for _, conn := range []string{"", "X-Fenceview-Forwarded-By", "close, X-Fenceview-Forwarded-By"} {
		hops.Store(0)
		req, _ := http.NewRequest("POST", n.url()+"/v1/locks/r/acquire", strings.NewReader(`{"holder":"h","leaseMs":1000}`))
		if conn != "" {
			req.Header.Set("Connection", conn)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 503 || hops.Load() != 1 || guard.Load() != n.self().ID {
			t.Fatalf("Connection %q: %d after %d hops, the other node saw the guard %q, want 503 after 1 hop with %q",
				conn, resp.StatusCode, hops.Load(), guard.Load(), n.self().ID)
		}
	}
}

// A node of a cluster has the single server's limits: --request-timeout
// ends a slow request at the leader and at a follower, --max-websockets
// caps each term's streams (counted at the leader, also for streams that
// come through a follower), and a waiting acquire still gets its wait on
// top of the timeout, through a follower too.
func TestClusterNodeHasTheServersLimits(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	nodes := startNodesWith(t, etcd.Endpoints(), 2, server.Config{Limits: server.Limits{RequestTimeout: time.Second, MaxWebsockets: 1}})
	leader, follower := leaderAndFollower(t, nodes)

	// A slow POST, unauthenticated: its body never comes; the node closes
	// the connection (the old node kept it open for good).
	for _, n := range []*node{leader, follower} {
		for _, path := range []string{"/v1/locks/r/release", "/v1/locks/r/acquire"} {
			conn, err := net.Dial("tcp", strings.TrimPrefix(n.url(), "http://"))
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", path, strings.TrimPrefix(n.url(), "http://"))
			conn.SetReadDeadline(time.Now().Add(hangGuard))
			_, err = io.Copy(io.Discard, bufio.NewReader(conn))
			conn.Close()
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("%s: a slow POST %s stayed open", n.self().ID, path)
			}
		}
	}

	// One websocket is the cap, at either node.
	ws := func(n *node) (*websocket.Conn, *http.Response, error) {
		return websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(n.url(), "http")+"/v1/events", nil)
	}
	first, _, err := ws(follower)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	for _, n := range []*node{leader, follower} {
		c, resp, err := ws(n)
		if err == nil {
			c.Close()
			t.Fatalf("%s: a second websocket opened past --max-websockets 1", n.self().ID)
		}
		if resp == nil || resp.StatusCode != 429 {
			t.Fatalf("%s: second websocket: %v %v, want 429", n.self().ID, resp, err)
		}
	}

	// A wait longer than the request timeout is answered, not cut.
	if a := call(t, "POST", leader.url()+"/v1/locks/w/acquire", map[string]any{"holder": "h1", "leaseMs": 60000}); a.Status != 200 {
		t.Fatalf("acquire: %d %v", a.Status, a.Body)
	}
	if a := call(t, "POST", leader.url()+"/v1/semaphores/s/acquire", map[string]any{"holder": "h1", "permits": 1, "leaseMs": 60000}); a.Status != 200 {
		t.Fatalf("semaphore acquire: %d %v", a.Status, a.Body)
	}
	if a := call(t, "POST", leader.url()+"/v1/elections/e/campaign", map[string]any{"candidate": "h1", "leaseMs": 60000}); a.Status != 200 {
		t.Fatalf("campaign: %d %v", a.Status, a.Body)
	}
	// Every request that may wait, at both nodes at once.
	waits := map[string]map[string]any{
		"/v1/locks/w/acquire":      {"holder": "h2", "leaseMs": 1000, "waitMs": 1500},
		"/v1/semaphores/s/acquire": {"holder": "h2", "permits": 1, "leaseMs": 1000, "waitMs": 1500},
		"/v1/locks/acquire-all":    {"resources": []string{"w", "x"}, "holder": "h2", "leaseMs": 1000, "waitMs": 1500},
		"/v1/elections/e/campaign": {"candidate": "h2", "leaseMs": 1000, "waitMs": 1500},
	}
	var wg sync.WaitGroup
	for _, n := range []*node{leader, follower} {
		for path, body := range waits {
			wg.Go(func() {
				a := call(t, "POST", n.url()+path, body)
				if a.Status != 409 || a.Body["error"] == nil {
					t.Errorf("%s: %s waiting 1.5s with a 1s request timeout: %d %v", n.self().ID, path, a.Status, a.Body)
				}
			})
		}
	}
	wg.Wait()
	// The stream opened through the follower outlived the request timeout
	// (it is the leader's to bound): it still carries a grant made now.
	if a := call(t, "POST", leader.url()+"/v1/locks/after-the-waits/acquire", map[string]any{"holder": "h3", "leaseMs": 1000}); a.Status != 200 {
		t.Fatalf("acquire: %d %v", a.Status, a.Body)
	}
	first.SetReadDeadline(time.Now().Add(hangGuard))
	for {
		var e struct{ Type, ResourceID string }
		if err := first.ReadJSON(&e); err != nil {
			t.Fatalf("the stream through the follower: %v", err)
		}
		if e.Type == "grant" && e.ResourceID == "after-the-waits" {
			break
		}
	}
}

// The leader's throttle counts the clients a follower forwards for, not the
// follower: one client's bad credentials through a follower do not lock
// out another client coming through the same follower. A client that names
// another address itself, without the cluster's peer secret, is counted as
// its own address.
func TestThrottleSeesClientsThroughAFollower(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	nodes := startNodesWith(t, etcd.Endpoints(), 2, server.Config{AdminToken: adminToken})
	leader, follower := leaderAndFollower(t, nodes)
	made := callAs(t, adminToken, "POST", leader.url()+"/v1/auth/keys", map[string]any{"name": "v", "role": "viewer"})
	viewer, _ := made.Body["secret"].(string)
	from := func(ip string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		return &http.Client{Timeout: hangGuard, Transport: &http.Transport{DialContext: d.DialContext}}
	}
	get := func(hc *http.Client, url, secret string, header ...string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", url+"/v1/resources", nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	guesser, honest := from("127.0.0.1"), from("127.0.0.2")
	for i := 0; ; i++ {
		st := get(guesser, follower.url(), fmt.Sprintf("guess-%d", i))
		if st == 429 {
			break
		}
		if st != 401 || i > 100 {
			t.Fatalf("guess %d through the follower: %d", i, st)
		}
	}
	if st := get(honest, follower.url(), viewer); st != 200 {
		t.Fatalf("another client through the same follower: %d, want 200", st)
	}
	if st := get(guesser, leader.url(), "guess-x", "X-Fenceview-Client", "192.0.2.7:1", "X-Fenceview-Peer", "forged"); st != 429 {
		t.Fatalf("the guesser at the leader, claiming another address: %d, want 429", st)
	}
}
