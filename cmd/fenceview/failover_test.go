//go:build !race || racecluster

package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/fenceview/fenceview/internal/cluster/etcdtest"
	"github.com/fenceview/fenceview/internal/servertest"
)

// failoverCluster is three fenceview processes over etcd with the given
// flags (none: the defaults), on a fresh prefix.
func failoverCluster(tb testing.TB, etcd *etcdtest.Cluster, prefix string, flags ...string) []*servertest.Process {
	tb.Helper()
	var procs []*servertest.Process
	for i := 0; i < 3; i++ {
		args := append([]string{"--etcd", joinList(etcd.Endpoints()), "--etcd-prefix", prefix}, flags...)
		procs = append(procs, servertest.StartProcess(tb, servertest.ProcessOptions{
			DBPath: filepath.Join(tb.TempDir(), fmt.Sprintf("n%d.db", i)), Args: args}))
	}
	return procs
}

// leaderProcess waits until a node names a leader and returns its index.
func leaderProcess(tb testing.TB, procs []*servertest.Process) int {
	tb.Helper()
	deadline := time.Now().Add(hangGuard)
	for time.Now().Before(deadline) {
		for _, p := range procs {
			r, err := getJSON(p.URL + "/v1/cluster")
			if err != nil || r.Status != 200 {
				continue
			}
			if l, _ := r.Body["leader"].(map[string]any); l != nil {
				for i, q := range procs {
					if l["url"] == q.URL {
						return i
					}
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatal("no leader")
	return -1
}

// killLeader SIGKILLs the leader of procs (once a grant went through a
// follower) and returns how long it took until a surviving node granted.
// Acquires go to the survivors in turn, each answered before the next.
func killLeader(tb testing.TB, procs []*servertest.Process, limit time.Duration) time.Duration {
	tb.Helper()
	i := leaderProcess(tb, procs)
	survivors := slices.Delete(slices.Clone(procs), i, i+1)
	if r, err := postJSON(clusterHC, survivors[0].URL+"/v1/locks/warm/acquire", `{"holder":"w","leaseMs":1}`); err != nil || r.Status != 200 {
		tb.Fatalf("before the kill: %v %v", r, err)
	}
	killed := time.Now()
	procs[i].Kill()
	for n := 0; ; n++ {
		r, err := postJSON(clusterHC, survivors[n%2].URL+"/v1/locks/failover-probe/acquire", `{"holder":"probe","leaseMs":1}`)
		if err == nil && r.Status == 200 {
			return time.Since(killed)
		}
		if time.Since(killed) > limit {
			tb.Fatalf("no grant through a survivor %v after the leader's SIGKILL (last: %v %v)", limit, r.Status, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A SIGKILLed leader's process is found gone by the followers, which end
// its term at once: a survivor grants long before its session's lease
// could run out (here 120 s, four times the hang guard). Safety is not
// timing's: the deposed leader commits nothing (TestDeposedLeaderCommitsNothing
// and TestClusterKillLeaderUnderLoad in the cluster's own tests).
func TestDeadLeaderProcessIsReplacedBeforeItsLease(t *testing.T) {
	etcd := etcdtest.Start(t, 1, etcdtest.DefaultTiming)
	procs := failoverCluster(t, etcd, "/"+t.Name()+"/", "--election-ttl", "120s")
	took := killLeader(t, procs, hangGuard)
	t.Logf("the first grant through a survivor came %v after the leader's SIGKILL", took.Round(time.Millisecond))
}

// BenchmarkFailover measures failover with the default settings: three
// nodes (real processes) over one etcd member with etcd's own timing, the
// leader SIGKILLed, and the time until a surviving node grants. Each
// iteration starts a fresh cluster; every figure is logged.
//
//	go test ./cmd/fenceview -run '^$' -bench Failover -benchtime 5x -v
func BenchmarkFailover(b *testing.B) {
	etcd := etcdtest.Start(b, 1, etcdtest.DefaultTiming)
	var took []time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		procs := failoverCluster(b, etcd, fmt.Sprintf("/failover-%d/", i))
		b.StartTimer()
		d := killLeader(b, procs, hangGuard)
		b.StopTimer()
		took = append(took, d)
		b.Logf("failover %d: %v", i, d.Round(time.Millisecond))
		for _, p := range procs {
			p.Kill()
		}
		b.StartTimer()
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Milliseconds()), "ms-median")
	b.ReportMetric(float64(took[len(took)-1].Milliseconds()), "ms-max")
}
