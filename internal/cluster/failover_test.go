//go:build !race || racecluster

package cluster_test

import (
	"context"
	"log/slog"
	"path/filepath"
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
		if got := sinks[n].changes(); len(got) == 0 || got[len(got)-1]["newLeader"] != old.self().ID {
			t.Fatalf("%s logged %v, want the change to %s", n.self().ID, got, old.self().ID)
		}
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
