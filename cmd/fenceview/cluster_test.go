//go:build !race || racecluster

// Under the race detector etcd, which these tests embed, is slow to build
// and to run, so the CI's race run leaves them out; the plain run has them.
// go test -race -tags racecluster ./cluster/... runs them raced.

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fenceview/fenceview/internal/cluster/etcdtest"
	"github.com/fenceview/fenceview/internal/servertest"
	"github.com/fenceview/fenceview/internal/sqlite"
)

// clusterNodes is a fenceview cluster: real server processes over a real
// etcd started in the test process.
type clusterNodes struct {
	t      *testing.T
	etcd   *etcdtest.Cluster
	prefix string
	dbs    []string

	mu    sync.Mutex
	procs []*servertest.Process
}

func startClusterNodes(t *testing.T, etcd *etcdtest.Cluster, n int) *clusterNodes {
	t.Helper()
	c := &clusterNodes{t: t, etcd: etcd, prefix: "/" + t.Name() + "/"}
	for i := 0; i < n; i++ {
		c.dbs = append(c.dbs, filepath.Join(t.TempDir(), fmt.Sprintf("node%d.db", i)))
		c.procs = append(c.procs, nil)
		c.start(i)
	}
	return c
}

// start (re)starts node i on its own database file.
func (c *clusterNodes) start(i int) {
	c.t.Helper()
	p := servertest.StartProcess(c.t, servertest.ProcessOptions{DBPath: c.dbs[i], Args: []string{"--etcd", joinList(c.etcd.AllEndpoints()), "--etcd-prefix", c.prefix, "--election-ttl", "1s"}})
	c.mu.Lock()
	c.procs[i] = p
	c.mu.Unlock()
}

// startLeadingCluster starts three nodes on one etcd member and returns
// once one of them leads.
func startLeadingCluster(t *testing.T) *clusterNodes {
	t.Helper()
	nodes := startClusterNodes(t, etcdtest.Start(t, 1), 3)
	nodes.leader()
	return nodes
}

func joinList(l []string) string {
	out := ""
	for i, s := range l {
		if i > 0 {
			out += ","
		}
		out += s
	}
	return out
}

// urls are the base URLs of the nodes believed alive.
func (c *clusterNodes) urls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, p := range c.procs {
		select {
		case <-p.Done:
		default:
			out = append(out, p.URL)
		}
	}
	return out
}

// leader waits until some node names a leader that answers, and returns
// its index.
func (c *clusterNodes) leader() int {
	c.t.Helper()
	deadline := time.Now().Add(hangGuard)
	for time.Now().Before(deadline) {
		for _, u := range c.urls() {
			r, err := getJSON(u + "/v1/cluster")
			if err != nil || r.Status != 200 {
				continue
			}
			l, _ := r.Body["leader"].(map[string]any)
			c.mu.Lock()
			for i, p := range c.procs {
				if l != nil && l["url"] == p.URL {
					c.mu.Unlock()
					return i
				}
			}
			c.mu.Unlock()
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatal("no leader")
	return -1
}

var clusterHC = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}

func getJSON(url string) (response, error) {
	resp, err := clusterHC.Get(url)
	if err != nil {
		return response{}, err
	}
	return decodeResponse(resp), nil
}

// The leader is SIGKILLed under load, many times, one etcd member of three
// dies half-way, and at the end every node is killed and restarted at once.
// Clients send every request to any node. Every acknowledged grant and
// accepted write survives each kill, no token is given twice, every node's
// history is the same, and in it each resource's grants strictly increase.
// Failover (the kill to the first grant at the next leader) is logged.
//
// FENCEVIEW_CLUSTER_KILLS sets the number of kills (default 6).
func TestClusterKillLeaderUnderLoad(t *testing.T) {
	kills, seed := processHarness(t, "FENCEVIEW_CLUSTER_KILLS", 6, "FENCEVIEW_CRASH_SEED")
	rng := rand.New(rand.NewPCG(seed, seed))
	etcd := etcdtest.Start(t, 3)
	nodes := startClusterNodes(t, etcd, 3)

	const clients, resourceCount = 12, 16
	var mu sync.Mutex
	given := map[string]int64{}             // highest token given, per resource
	accepted := map[string]int64{}          // highest token accepted by a fence call
	tokens := map[string]map[int64]string{} // every token given, per resource
	var acks atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int, seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			holder := fmt.Sprintf("client-%d", c)
			for {
				select {
				case <-stop:
					return
				default:
				}
				urls := nodes.urls()
				if len(urls) == 0 {
					continue
				}
				via := func() string { return urls[rng.IntN(len(urls))] }
				res := fmt.Sprintf("res-%d", rng.IntN(resourceCount))
				g, err := postJSON(clusterHC, via()+"/v1/locks/"+res+"/acquire", fmt.Sprintf(`{"holder":%q,"leaseMs":%d}`, holder, 100+rng.IntN(500)))
				if err != nil || g.Status != 200 {
					if err != nil || g.Status == 503 {
						time.Sleep(20 * time.Millisecond) // pacing while a node restarts
					}
					continue
				}
				if g.Body == nil {
					// The answer was cut off (its node killed while it
					// was sent): the client has no token, nothing is
					// acknowledged.
					continue
				}
				tok := tokenOf(g)
				if tok <= 0 {
					t.Errorf("a whole 200 answer without a token: %v", g.Body)
					return
				}
				mu.Lock()
				if other, dup := tokens[res][tok]; dup {
					mu.Unlock()
					t.Errorf("token %d for %s given to %s and to %s", tok, res, other, holder)
					return
				}
				if tokens[res] == nil {
					tokens[res] = map[int64]string{}
				}
				tokens[res][tok] = holder
				given[res] = max(given[res], tok)
				mu.Unlock()
				acks.Add(1)
				for w := rng.IntN(3); w >= 0; w-- {
					f, err := postJSON(clusterHC, via()+"/v1/fence/"+res, fmt.Sprintf(`{"token":%d}`, tok))
					if err == nil && f.Status == 200 {
						mu.Lock()
						accepted[res] = max(accepted[res], tok)
						mu.Unlock()
						acks.Add(1)
					}
				}
				postJSON(clusterHC, via()+"/v1/locks/"+res+"/release", fmt.Sprintf(`{"holder":%q}`, holder))
			}
		}(c, rng.Uint64())
	}
	defer func() { close(stop); wg.Wait() }()

	verify := func(when string) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		u := nodes.urls()[0]
		for res, want := range given {
			r := retry503(t, "GET", u+"/v1/resources/"+res, nil)
			if r.num("lastToken") < want || r.num("highWaterMark") < accepted[res] {
				t.Fatalf("%s: %s = %v; given up to %d, accepted up to %d", when, res, r.Body, want, accepted[res])
			}
		}
	}

	var failovers []time.Duration
	for k := 0; k < kills; k++ {
		for start := acks.Load(); acks.Load() < start+int64(20+rng.IntN(200)); {
			time.Sleep(5 * time.Millisecond)
		}
		if k == kills/2 {
			etcd.StopMember(rng.IntN(3))
			t.Logf("kill %d: one etcd member of three stopped", k)
		}
		i := nodes.leader()
		nodes.mu.Lock()
		p := nodes.procs[i]
		nodes.mu.Unlock()
		killed := time.Now()
		p.Kill()
		// Failover: until a grant is acknowledged by the next leader.
		for n := 0; ; n++ {
			urls := nodes.urls()
			g, err := postJSON(clusterHC, urls[n%len(urls)]+"/v1/locks/failover-probe/acquire", `{"holder":"probe","leaseMs":1}`)
			if err == nil && g.Status == 200 {
				break
			}
			if time.Since(killed) > hangGuard {
				t.Fatalf("kill %d: no grant since", k)
			}
			time.Sleep(10 * time.Millisecond)
		}
		failovers = append(failovers, time.Since(killed))
		verify(fmt.Sprintf("after kill %d", k))
		nodes.start(i)
	}

	// Every node at once.
	for i := range nodes.procs {
		nodes.procs[i].Kill()
	}
	for i := range nodes.procs {
		nodes.start(i)
	}
	nodes.leader()
	verify("after killing every node")
	close(stop)
	wg.Wait()
	stop = make(chan struct{})
	if t.Failed() {
		return
	}

	// The histories: wait for the followers to copy the last events, then
	// read every node's file.
	var last int64
	for _, u := range nodes.urls() {
		g := retry503(t, "POST", u+"/v1/locks/final/acquire", map[string]any{"holder": "final", "leaseMs": 60000})
		if g.Status != 200 {
			t.Fatalf("final grant: %d %v", g.Status, g.Body)
		}
		retry503(t, "POST", u+"/v1/locks/final/release", map[string]any{"holder": "final"})
	}
	ctx := context.Background()
	var histories [][]string
	for i := range nodes.procs {
		nodes.procs[i].Signal(syscall.SIGTERM)
		<-nodes.procs[i].Done
		db, err := sqlite.Open(ctx, nodes.dbs[i])
		if err != nil {
			t.Fatal(err)
		}
		events, err := db.EventsAfter(ctx, 0, "", 1<<30)
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		var h []string
		grants := map[string]int64{}
		seen := map[string]map[int64]bool{}
		for j, e := range events {
			if e.Seq != int64(j+1) {
				t.Fatalf("node %d: event %d has seq %d; the history has a hole", i, j+1, e.Seq)
			}
			if e.Type == "grant" {
				if e.Token <= grants[e.ResourceID] {
					t.Fatalf("node %d: grant of %s token %d after %d", i, e.ResourceID, e.Token, grants[e.ResourceID])
				}
				grants[e.ResourceID] = e.Token
				if seen[e.ResourceID] == nil {
					seen[e.ResourceID] = map[int64]bool{}
				}
				seen[e.ResourceID][e.Token] = true
			}
			h = append(h, fmt.Sprintf("%d %s %s %d %s", e.Seq, e.Type, e.ResourceID, e.Token, e.Holder))
		}
		mu.Lock()
		for res, ts := range tokens {
			for tok := range ts {
				if !seen[res][tok] {
					t.Fatalf("node %d: acknowledged grant %s token %d is not in the history", i, res, tok)
				}
			}
		}
		mu.Unlock()
		histories = append(histories, h)
		last = max(last, int64(len(h)))
	}
	for i, h := range histories {
		n := min(len(h), len(histories[0]))
		if !slices.Equal(h[:n], histories[0][:n]) {
			t.Fatalf("node %d's history differs from node 0's", i)
		}
	}
	sort.Slice(failovers, func(i, j int) bool { return failovers[i] < failovers[j] })
	t.Logf("%d acknowledgements across %d leader kills, %d events in every history; failover p50 %v, max %v (election TTL 1s)",
		acks.Load(), kills, last, failovers[len(failovers)/2].Round(time.Millisecond), failovers[len(failovers)-1].Round(time.Millisecond))
}

// retry503 is doRequest retried while the answer is 503 with Retry-After,
// as a client does while a cluster elects a leader.
func retry503(t *testing.T, method, url string, body any) response {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		r := doRequest(t, method, url, body)
		if r.Status != 503 || r.Header.Get("Retry-After") == "" || time.Now().After(deadline) {
			return r
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A leader paused (SIGSTOP) past the election TTL is replaced; requests
// that reach it while it is paused are answered, when it resumes, without
// committing anything on its stale state: no grant of a lock the new
// leader gave away, no write accepted below the new leader's mark, no stale
// read.
func TestClusterPausedLeaderCommitsNothing(t *testing.T) {
	processTest(t)
	etcd := etcdtest.Start(t, 1)
	nodes := startClusterNodes(t, etcd, 2)
	i := nodes.leader()
	old, next := nodes.procs[i], nodes.procs[1-i]
	g := retry503(t, "POST", old.URL+"/v1/locks/r/acquire", map[string]any{"holder": "a", "leaseMs": 60000})
	if g.Status != 200 {
		t.Fatalf("acquire: %d %v", g.Status, g.Body)
	}
	t1 := tokenOf(g)

	old.Signal(syscall.SIGSTOP)
	resumed := false
	defer func() {
		if !resumed {
			old.Signal(syscall.SIGCONT)
		}
	}()
	// The other node takes over and moves on: r to b (a newer token, then
	// a write with it), p to c.
	// (Ask only the other node: the paused one would hold the question.)
	deadline := time.Now().Add(hangGuard)
	for {
		r, err := getJSON(next.URL + "/v1/cluster")
		if l, _ := r.Body["leader"].(map[string]any); err == nil && l["url"] == next.URL {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no new leader")
		}
		time.Sleep(20 * time.Millisecond)
	}
	retry503(t, "POST", next.URL+"/v1/locks/r/expire", nil)
	g2 := retry503(t, "POST", next.URL+"/v1/locks/r/acquire", map[string]any{"holder": "b", "leaseMs": 60000})
	t2 := tokenOf(g2)
	if g2.Status != 200 || t2 <= t1 {
		t.Fatalf("grant at the new leader: %d %v, previous token %d", g2.Status, g2.Body, t1)
	}
	if f := retry503(t, "POST", next.URL+"/v1/fence/r", map[string]any{"token": t2}); f.Status != 200 {
		t.Fatalf("fence at the new leader: %d %v", f.Status, f.Body)
	}
	gp := retry503(t, "POST", next.URL+"/v1/locks/p/acquire", map[string]any{"holder": "c", "leaseMs": 60000})
	if gp.Status != 200 {
		t.Fatalf("p at the new leader: %d %v", gp.Status, gp.Body)
	}

	// Requests reach the paused leader and wait in its socket.
	type result struct {
		r   response
		err error
	}
	send := func(method, path, body string) chan result {
		ch := make(chan result, 1)
		go func() {
			req, _ := http.NewRequest(method, old.URL+path, stringsReader(body))
			resp, err := clusterHC.Do(req)
			if err != nil {
				ch <- result{err: err}
				return
			}
			ch <- result{r: decodeResponse(resp)}
		}()
		return ch
	}
	grabP := send("POST", "/v1/locks/p/acquire", `{"holder":"stale","leaseMs":60000}`)
	writeR := send("POST", "/v1/fence/r", fmt.Sprintf(`{"token":%d}`, t1))
	readP := send("GET", "/v1/locks/p", "")
	old.Signal(syscall.SIGCONT)
	resumed = true

	a1, a2, a3 := <-grabP, <-writeR, <-readP
	t.Logf("answers of the resumed leader: acquire %d %v; fence %d %v; read %d %v", a1.r.Status, a1.r.Body, a2.r.Status, a2.r.Body, a3.r.Status, a3.r.Body)
	if a1.err != nil || a1.r.Status == 200 {
		t.Fatalf("the deposed leader granted p, which the new leader gave to c: %+v", a1)
	}
	if a2.err != nil || a2.r.Status == 200 {
		t.Fatalf("the deposed leader accepted token %d below the new mark %d: %+v", t1, t2, a2)
	}
	if a3.err != nil || (a3.r.Status == 200 && a3.r.Body["holder"] != "c") {
		t.Fatalf("the deposed leader answered a stale read of p: %+v", a3)
	}
	// The new leader's state is untouched.
	if l := retry503(t, "GET", next.URL+"/v1/locks/p", nil); l.Body["holder"] != "c" || l.num("token") != tokenOf(gp) {
		t.Fatalf("p after the deposed leader resumed: %v", l.Body)
	}
	if r := retry503(t, "GET", next.URL+"/v1/resources/r", nil); r.num("highWaterMark") != t2 || r.num("lastToken") != t2 {
		t.Fatalf("r after the deposed leader resumed: %v", r.Body)
	}
	// And the old leader follows.
	var last response
	for deadline = time.Now().Add(hangGuard); time.Now().Before(deadline); {
		r, err := getJSON(old.URL + "/v1/cluster")
		if err == nil && r.Status == 200 {
			last = r
			if self, _ := r.Body["self"].(map[string]any); self["role"] == "follower" {
				if l, _ := r.Body["leader"].(map[string]any); l["url"] == next.URL {
					return
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the resumed node never followed the new leader: %v", last.Body)
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }
