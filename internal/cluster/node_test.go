//go:build !race || racecluster

// Under the race detector etcd, which these tests embed, is slow to build
// and to run, so the CI's race run leaves them out; the plain run has them.
// go test -race -tags racecluster ./cluster/... runs them raced.

package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/clock"
	"github.com/fenceview/fenceview/internal/cluster"
	"github.com/fenceview/fenceview/internal/cluster/etcdtest"
	"github.com/fenceview/fenceview/internal/server"
	"github.com/fenceview/fenceview/internal/servertest"
)

// hangGuard turns a wait that should end into a failure; it asserts nothing
// about speed.
const hangGuard = 60 * time.Second

type node struct {
	t   *testing.T
	srv *servertest.Server
	db  string
}

// nodeBehind starts etcd and a node queued in the election behind a
// candidate whose key holds value, under a lease of its own: put sets the
// candidate's key to another value, revoke ends the lease and with it the
// candidate.
func nodeBehind(t *testing.T, value string) (n *node, put func(value string), revoke func()) {
	t.Helper()
	etcd := etcdtest.Start(t, 1)
	prefix := "/" + t.Name() + "/"
	cli := must(clientv3.New(clientv3.Config{Endpoints: etcd.Endpoints(), Logger: zap.NewNop()}))
	t.Cleanup(func() { cli.Close() })
	ctx := context.Background()
	lease := must(cli.Grant(ctx, 60))
	put = func(value string) { must(cli.Put(ctx, prefix+"election/0", value, clientv3.WithLease(lease.ID))) }
	put(value)
	n = startNode(t, etcd.Endpoints(), prefix, filepath.Join(t.TempDir(), "n.db"))
	return n, put, func() { must(cli.Revoke(ctx, lease.ID)) }
}

// deadLeader is a leader's key in the election naming an address nothing
// answers on.
const deadLeader = `{"id":"node-gone","url":"http://127.0.0.1:1"}`

func startNode(t *testing.T, etcd []string, prefix, db string) *node {
	t.Helper()
	return startNodeWith(t, server.Config{DBPath: db, Cluster: server.ClusterConfig{Etcd: etcd, Prefix: prefix}})
}

// startNodeWith starts a node of cfg on 127.0.0.1:0 and the wall clock (the
// cluster's leases are etcd's), with a one-second election TTL unless cfg
// says otherwise.
func startNodeWith(t *testing.T, cfg server.Config) *node {
	t.Helper()
	if cfg.Cluster.ElectionTTL == 0 {
		cfg.Cluster.ElectionTTL = time.Second
	}
	cfg.Clock = clock.Real{}
	n := &node{t: t, srv: servertest.Start(t, cfg), db: cfg.DBPath}
	return n
}

func (n *node) close()               { n.srv.Close() }
func (n *node) url() string          { return n.srv.URL() }
func (n *node) leading() bool        { return n.srv.Node.Service() != nil }
func (n *node) self() cluster.Member { return n.srv.Node.Self() }

func startNodes(t *testing.T, etcd []string, count int) []*node {
	t.Helper()
	return startNodesWith(t, etcd, count, server.Config{})
}

// startNodesWith starts count nodes of cfg, each on its own database, in
// a cluster of the test's own prefix.
func startNodesWith(t *testing.T, etcd []string, count int, cfg server.Config) []*node {
	t.Helper()
	cfg.Cluster.Etcd, cfg.Cluster.Prefix = etcd, "/"+t.Name()+"/"
	var out []*node
	for i := 0; i < count; i++ {
		cfg.DBPath = filepath.Join(t.TempDir(), fmt.Sprintf("n%d.db", i))
		out = append(out, startNodeWith(t, cfg))
	}
	return out
}

// leaderOf waits until exactly one of nodes leads and every node knows it.
func leaderOf(t *testing.T, nodes []*node) *node {
	t.Helper()
	var leader *node
	servertest.Eventually(t, "one leader, known to all", func() bool {
		leader = nil
		for _, n := range nodes {
			if n.leading() {
				if leader != nil {
					return false
				}
				leader = n
			}
		}
		if leader == nil {
			return false
		}
		for _, n := range nodes {
			if l := n.srv.Node.Leader(); l == nil || l.ID != leader.self().ID {
				return false
			}
		}
		return true
	})
	return leader
}

// leaderAndFollower waits for the leader of nodes and returns it and a
// node that is not it.
func leaderAndFollower(t *testing.T, nodes []*node) (leader, follower *node) {
	t.Helper()
	leader = leaderOf(t, nodes)
	for _, n := range nodes {
		if n != leader {
			follower = n
		}
	}
	return leader, follower
}

type answer struct {
	Status int
	Header http.Header
	Body   map[string]any
}

func (a answer) num(key string) int64 {
	f, _ := a.Body[key].(float64)
	return int64(f)
}

func (a answer) token() int64 {
	f, _ := a.Body["fencing"].(map[string]any)
	v, _ := f["token"].(float64)
	return int64(v)
}

var hc = &http.Client{Timeout: hangGuard}

func call(t *testing.T, method, url string, body any) answer {
	t.Helper()
	return callAs(t, "", method, url, body)
}

// callAs is call with a bearer credential, unless secret is empty.
func callAs(t *testing.T, secret, method, url string, body any) answer {
	t.Helper()
	var header []string
	if secret != "" {
		header = []string{"Authorization", "Bearer " + secret}
	}
	a := servertest.Do(t, hc, servertest.NewRequest(t, method, url, body, header...))
	return answer{Status: a.Status, Header: a.Header, Body: a.Body}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Tokens strictly increase across leader changes, a lease granted by one
// leader is renewed and released at the next, and any node answers.
func TestTokensIncreaseAcrossLeaderChanges(t *testing.T) {
	if testing.Short() {
		t.Skip("three etcd members and three leader changes")
	}
	etcd := etcdtest.Start(t, 3)
	nodes := startNodes(t, etcd.Endpoints(), 3)
	var last int64
	for round := 0; round < 3; round++ {
		leader, follower := leaderAndFollower(t, nodes)
		// A lease from the previous leader is still held, renewable here.
		if round > 0 {
			r := call(t, "POST", follower.url()+"/v1/locks/r/renew", map[string]any{"holder": "h"})
			if r.Status != 200 || r.token() != last {
				t.Fatalf("round %d: renew at the new leader = %d %v, want token %d", round, r.Status, r.Body, last)
			}
			if r := call(t, "POST", follower.url()+"/v1/locks/r/release", map[string]any{"holder": "h"}); r.Status != 200 {
				t.Fatalf("round %d: release = %d %v", round, r.Status, r.Body)
			}
		}
		for i := 0; i < 5; i++ {
			via := nodes[i%len(nodes)]
			g := call(t, "POST", via.url()+"/v1/locks/r/acquire", map[string]any{"holder": "h", "leaseMs": 60000})
			if g.Status != 200 || g.token() <= last {
				t.Fatalf("round %d: acquire via %s = %d %v, last token %d", round, via.self().ID, g.Status, g.Body, last)
			}
			last = g.token()
			if i < 4 {
				call(t, "POST", via.url()+"/v1/locks/r/release", map[string]any{"holder": "h"})
			}
		}
		// Every node reads the same lock, the acknowledged grant included.
		for _, n := range nodes {
			if l := call(t, "GET", n.url()+"/v1/locks/r", nil); l.Status != 200 || l.num("token") != last || l.Body["holder"] != "h" {
				t.Fatalf("round %d: lock via %s = %d %v, want token %d held by h", round, n.self().ID, l.Status, l.Body, last)
			}
		}
		// The leader goes; the others elect a new one. It comes back as a
		// follower on the same file.
		leader.close()
		fresh := startNode(t, etcd.Endpoints(), "/"+t.Name()+"/", leader.db)
		for i, n := range nodes {
			if n == leader {
				nodes[i] = fresh
			}
		}
	}
}

// GET /v1/cluster names every node, the leader and this node's role.
func TestClusterEndpoint(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	nodes := startNodes(t, etcd.Endpoints(), 3)
	leader := leaderOf(t, nodes)
	for _, n := range nodes {
		var c struct {
			Self    cluster.Member
			Leader  *cluster.Member
			Members []cluster.Member
		}
		var a answer
		servertest.Eventually(t, "every member registered", func() bool {
			a = call(t, "GET", n.url()+"/v1/cluster", nil)
			c.Members = nil
			json.Unmarshal(must(json.Marshal(a.Body)), &c)
			return len(c.Members) == 3
		})
		wantRole := "follower"
		if n == leader {
			wantRole = "leader"
		}
		if a.Status != 200 || c.Self.ID != n.self().ID || c.Self.URL != n.url() || c.Self.Role != wantRole ||
			c.Leader == nil || c.Leader.ID != leader.self().ID || c.Leader.URL != leader.url() {
			t.Fatalf("%s: /v1/cluster = %d %v", n.self().ID, a.Status, a.Body)
		}
		leaders := 0
		for _, m := range c.Members {
			if m.Role == "leader" {
				leaders++
			}
		}
		if leaders != 1 {
			t.Fatalf("members %v: want exactly one leader", c.Members)
		}
	}
}

// A waiter at a leader that goes away is answered with a retryable 503,
// not left hanging; the lock it waited for is still held by its holder.
func TestWaitersAnsweredRetryableOnFailover(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	nodes := startNodes(t, etcd.Endpoints(), 2)
	leader, follower := leaderAndFollower(t, nodes)
	g := call(t, "POST", follower.url()+"/v1/locks/w/acquire", map[string]any{"holder": "a", "leaseMs": 60000})
	if g.Status != 200 {
		t.Fatalf("acquire: %d %v", g.Status, g.Body)
	}
	waited := make(chan answer, 1)
	go func() {
		waited <- call(t, "POST", follower.url()+"/v1/locks/w/acquire", map[string]any{"holder": "b", "waitMs": 120000})
	}()
	servertest.Eventually(t, "b queued at the leader", func() bool {
		return call(t, "GET", leader.url()+"/v1/locks/w", nil).Status == 200 && leader.srv.Node.Service() != nil &&
			must(leader.srv.Node.Service().Lock("w")).Waiters == 1
	})
	leader.srv.Node.Close()
	w := <-waited
	if w.Status != 503 || w.Header.Get("Retry-After") == "" {
		t.Fatalf("waiter after failover = %d %v %v, want 503 with Retry-After", w.Status, w.Header, w.Body)
	}
	servertest.Eventually(t, "the follower leads", follower.leading)
	if l := call(t, "GET", follower.url()+"/v1/locks/w", nil); l.Body["holder"] != "a" || l.num("token") != g.token() {
		t.Fatalf("after failover: %v, want held by a with token %d", l.Body, g.token())
	}
}

// Every node's history holds the same events with the same sequence
// numbers, fed from the cluster's log; a group commit larger than one etcd
// transaction allows (500 resources) lands whole and in order.
func TestHistoryOnEveryNode(t *testing.T) {
	if testing.Short() {
		t.Skip("hundreds of requests through three nodes")
	}
	etcd := etcdtest.Start(t, 1)
	nodes := startNodes(t, etcd.Endpoints(), 3)
	leaderOf(t, nodes)
	var decisions []map[string]any
	for i := 0; i < 500; i++ {
		decisions = append(decisions, map[string]any{"resourceId": fmt.Sprintf("big-%03d", i), "token": 7, "accepted": false, "required": 9, "source": "plugin"})
	}
	if a := call(t, "POST", nodes[0].url()+"/v1/decisions", map[string]any{"decisions": decisions}); a.Status != 200 || a.num("recorded") != 500 {
		t.Fatalf("decisions: %d %v", a.Status, a.Body)
	}
	var wg sync.WaitGroup
	for c := 0; c < 8; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				via := nodes[(c+i)%len(nodes)]
				res := fmt.Sprintf("h-%d", c)
				call(t, "POST", via.url()+"/v1/locks/"+res+"/acquire", map[string]any{"holder": "x"})
				call(t, "POST", via.url()+"/v1/fence/"+res, map[string]any{"token": 1})
				call(t, "POST", via.url()+"/v1/locks/"+res+"/release", map[string]any{"holder": "x"})
			}
		}(c)
	}
	wg.Wait()
	want := nodes[0].srv.DB
	ctx := context.Background()
	var top int64
	servertest.Eventually(t, "every history at the same seq", func() bool {
		top = 0
		for _, n := range nodes {
			s := must(n.srv.DB.MaxSeq(ctx))
			if top != 0 && s != top {
				return false
			}
			top = s
		}
		return top >= 500+8*10*3
	})
	ref := must(want.EventsAfter(ctx, 0, "", 10000))
	if int64(len(ref)) != top {
		t.Fatalf("%d events up to seq %d: want one per seq", len(ref), top)
	}
	for _, n := range nodes {
		got := must(n.srv.DB.EventsAfter(ctx, 0, "", 10000))
		if !equalJSON(got, ref) {
			t.Fatalf("%s: history differs from the others", n.self().ID)
		}
		rej := call(t, "GET", n.url()+"/v1/rejections?resource=big-123", nil)
		if list, _ := rej.Body["rejections"].([]any); rej.Status != 200 || len(list) != 1 {
			t.Fatalf("%s: rejections of big-123 = %d %v", n.self().ID, rej.Status, rej.Body)
		}
	}
	if r := call(t, "GET", nodes[2].url()+"/v1/resources/big-499", nil); r.Status != 200 || r.num("rejected") != 1 {
		t.Fatalf("big-499: %d %v", r.Status, r.Body)
	}
}

func equalJSON(a, b any) bool {
	return bytes.Equal(must(json.Marshal(a)), must(json.Marshal(b)))
}

// A node that joins after the log was trimmed past its history copies what
// is kept, records the hole, and serves the same later history.
func TestNodeBehindTheLogsRetention(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	ctx := context.Background()
	prefix := "/" + t.Name() + "/"
	first := startNode(t, etcd.Endpoints(), prefix, filepath.Join(t.TempDir(), "first.db"))
	leaderOf(t, []*node{first})
	for i := 0; i < 30; i++ {
		call(t, "POST", first.url()+"/v1/fence/r", map[string]any{"token": i + 1})
	}
	// With the default retention nothing goes; shorten it for this test.
	first.srv.Node.SetLogRetention(10)
	if err := first.srv.Node.TrimLog(ctx); err != nil {
		t.Fatal(err)
	}
	late := startNode(t, etcd.Endpoints(), prefix, filepath.Join(t.TempDir(), "late.db"))
	top := first.srv.Node.Service().LastSeq()
	servertest.Eventually(t, "the late node caught up", func() bool { return must(late.srv.DB.MaxSeq(ctx)) == top })
	servertest.Eventually(t, "the leader's own copy caught up", func() bool { return must(first.srv.DB.MaxSeq(ctx)) == top })
	if late.srv.Node.HistoryGaps() != 1 {
		t.Fatalf("gaps = %d, want 1", late.srv.Node.HistoryGaps())
	}
	got := must(late.srv.DB.EventsAfter(ctx, 0, "", 1000))
	if len(got) == 0 || len(got) > 20 || got[len(got)-1].Seq != top {
		t.Fatalf("late history: %d events ending at %d; want the retained tail ending at %d", len(got), got[len(got)-1].Seq, top)
	}
	all := must(first.srv.DB.EventsAfter(ctx, got[0].Seq-1, "", 1000))
	if !equalJSON(got, all) {
		t.Fatal("the retained tail differs from the leader's history")
	}
}

// With no leader a node answers 503 with Retry-After; a follower whose
// leader does not answer says so the same way.
func TestNoLeaderIs503(t *testing.T) {
	// A candidate ahead of the node, with nothing behind it: no usable
	// leader, and the node queues behind it.
	n, put, revoke := nodeBehind(t, "not a member")
	a := call(t, "POST", n.url()+"/v1/locks/r/acquire", map[string]any{"holder": "a"})
	if a.Status != 503 || a.Header.Get("Retry-After") == "" || a.Body["error"] == nil {
		t.Fatalf("no leader: %d %v %v", a.Status, a.Header, a.Body)
	}
	// A leader that is gone.
	put(deadLeader)
	servertest.Eventually(t, "the node sees the dead leader", func() bool { l := n.srv.Node.Leader(); return l != nil && l.ID == "node-gone" })
	a = call(t, "POST", n.url()+"/v1/locks/r/acquire", map[string]any{"holder": "a"})
	if a.Status != 503 || a.Header.Get("Retry-After") == "" {
		t.Fatalf("dead leader: %d %v %v", a.Status, a.Header, a.Body)
	}
	// Its lease gone, the node leads.
	revoke()
	servertest.Eventually(t, "the node leads", n.leading)
	if a := call(t, "POST", n.url()+"/v1/locks/r/acquire", map[string]any{"holder": "a"}); a.Status != 200 {
		t.Fatalf("after: %d %v", a.Status, a.Body)
	}
}

// The issuer id and the signing keys are the cluster's: every node
// publishes the same keys, and the next leader signs with the same key and
// names the same issuer.
func TestIssuerAndSigningKeysAreTheClusters(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	nodes := startNodes(t, etcd.Endpoints(), 2)
	leader := leaderOf(t, nodes)
	ctx := context.Background()
	before, err := leader.srv.Node.Service().Acquire(ctx, fenceview.AcquireRequest{ResourceID: "s", Holder: "a", Lease: time.Millisecond, Wait: 0})
	keys := call(t, "GET", nodes[0].url()+"/v1/signing-keys", nil)
	if err != nil || keys.Status != 200 {
		t.Fatalf("grant %v; keys %d %v", err, keys.Status, keys.Body)
	}
	if other := call(t, "GET", nodes[1].url()+"/v1/signing-keys", nil); !equalJSON(other.Body, keys.Body) {
		t.Fatalf("nodes publish different keys: %v and %v", keys.Body, other.Body)
	}
	leader.close()
	var next *node
	for _, n := range nodes {
		if n != leader {
			next = n
		}
	}
	servertest.Eventually(t, "the other node leads", next.leading)
	after, err := next.srv.Node.Service().Acquire(ctx, fenceview.AcquireRequest{ResourceID: "s", Holder: "b", Lease: time.Millisecond, Wait: 0})
	f1, f2 := before.Fencing, after.Fencing
	if err != nil || f1.KeyID == "" || f1.KeyID != f2.KeyID || f1.Issuer != f2.Issuer || f2.Token <= f1.Token {
		t.Fatalf("before the leader change %+v, after %+v (%v): want the same issuer and key, a newer token", f1, f2, err)
	}
	if again := call(t, "GET", next.url()+"/v1/signing-keys", nil); !equalJSON(again.Body, keys.Body) {
		t.Fatalf("keys changed with the leader: %v, then %v", keys.Body, again.Body)
	}
	// Both leaders' grants are batch carriers that verify with the
	// cluster's published key.
	pub, err := guard.DecodePublicKey(keys.Body["keys"].([]any)[0].(map[string]any)["publicKey"].(string))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := guard.NewVerifier(pub)
	for _, g := range []fenceview.Grant{before, after} {
		if raw, err := guard.DecodeCarrier(g.Fencing.Signature); err != nil || raw[0] != 0x02 || !v.VerifyText(g.ResourceID, g.Fencing.Token, g.Fencing.Signature) {
			t.Fatalf("grant %+v: not a batch carrier that verifies with the cluster's key (%v)", g.Fencing, err)
		}
	}
}
