//go:build !race || racecluster

package cluster_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fenceview/fenceview/internal/cluster/etcdtest"
	"github.com/fenceview/fenceview/internal/server"
	"github.com/fenceview/fenceview/internal/servertest"
)

// logSink keeps the records of every logger made from it.
type logSink struct {
	mu      sync.Mutex
	records []map[string]string
}

type sinkHandler struct {
	sink  *logSink
	attrs []slog.Attr
}

func (h sinkHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h sinkHandler) Handle(_ context.Context, r slog.Record) error {
	rec := map[string]string{"msg": r.Message}
	for _, a := range h.attrs {
		rec[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec[a.Key] = a.Value.String()
		return true
	})
	h.sink.mu.Lock()
	h.sink.records = append(h.sink.records, rec)
	h.sink.mu.Unlock()
	return nil
}

func (h sinkHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return sinkHandler{sink: h.sink, attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}

func (h sinkHandler) WithGroup(string) slog.Handler { return h }

// changes are the leader changes the sink's node logged, in order.
func (s *logSink) changes() []map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]string
	for _, r := range s.records {
		if r["msg"] == "cluster leader changed" {
			out = append(out, r)
		}
	}
	return out
}

// Followers logged nothing when the leader changed. Every node now logs
// each change it sees, naming the old and the new leader.
func TestEveryNodeLogsTheLeaderChange(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	prefix := "/" + t.Name() + "/"
	var nodes []*node
	sinks := map[*node]*logSink{}
	for i := 0; i < 3; i++ {
		sink := &logSink{}
		n := startNodeWith(t, server.Config{DBPath: filepath.Join(t.TempDir(), "n.db"), Logger: slog.New(sinkHandler{sink: sink}),
			Cluster: server.ClusterConfig{Etcd: etcd.Endpoints(), Prefix: prefix}})
		nodes = append(nodes, n)
		sinks[n] = sink
	}
	old := leaderOf(t, nodes)
	for _, n := range nodes {
		// A follower learns of the first leader through its watch, which
		// may come after the leader itself is ready.
		servertest.Eventually(t, "the first leader logged", func() bool {
			got := sinks[n].changes()
			return len(got) > 0 && got[len(got)-1]["newLeader"] == old.self().ID
		})
	}
	old.close()
	var rest []*node
	for _, n := range nodes {
		if n != old {
			rest = append(rest, n)
		}
	}
	next := leaderOf(t, rest)
	for _, n := range rest {
		servertest.Eventually(t, "the change logged", func() bool {
			got := sinks[n].changes()
			return len(got) > 0 && got[len(got)-1]["newLeader"] == next.self().ID
		})
		saw := false
		for _, c := range sinks[n].changes() {
			if c["oldLeader"] == old.self().ID {
				saw = true
			}
		}
		if !saw {
			t.Fatalf("%s logged %v: no change from %s", n.self().ID, sinks[n].changes(), old.self().ID)
		}
	}
}

// A follower answered 503 at once while the leader it knew was gone, and
// the client slept its Retry-After before trying the next leader. It now
// holds the request and forwards it, or serves it, once the next leader
// does: here the dead leader's lease is revoked while the request waits,
// and the node, the next leader, grants it.
func TestFollowerHoldsARequestForTheNextLeader(t *testing.T) {
	n, _, revoke := nodeBehind(t, deadLeader)
	ctx := context.Background()
	servertest.Eventually(t, "the node sees the dead leader", func() bool { l := n.srv.Node.Leader(); return l != nil && l.ID == "node-gone" })
	wrote := make(chan struct{})
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { close(wrote) },
	}), "POST", n.url()+"/v1/locks/r/acquire", strings.NewReader(`{"holder":"a"}`))
	req.Header.Set("Content-Type", "application/json")
	done := make(chan int, 1)
	go func() {
		res, err := hc.Do(req)
		if err != nil {
			done <- 0
			return
		}
		res.Body.Close()
		done <- res.StatusCode
	}()
	<-wrote // the node has it, with the dead leader to forward it to
	revoke()
	if status := <-done; status != http.StatusOK {
		t.Fatalf("the request held across the leader change: %d, want 200", status)
	}
}
