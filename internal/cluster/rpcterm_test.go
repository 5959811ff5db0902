//go:build !race || racecluster

package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/internal/cluster/etcdtest"
	"github.com/fenceview/fenceview/internal/server"
	"github.com/fenceview/fenceview/internal/servertest"
	"github.com/fenceview/fenceview/internal/wire"
)

// An RPC connection opened during a leader's term does not outlive it:
// at the term's end the request it holds (a waiting acquire) is answered,
// then the connection closes with 1012 (service restart) rather than
// answering every later call 503. A new connection through the same node
// reaches the next leader, which holds the grant acknowledged before the
// change and issues no token twice.
func TestRPCConnectionEndsWithItsTerm(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	// Terms end here only when the test ends one: a 3 s TTL, not the
	// tests' 1 s, so a busy machine's late keep-alive does not end the
	// next leader's under its connections. (The leader whose lease is
	// revoked learns of it at its next keep-alive, a third of the TTL.)
	nodes := startNodesWith(t, etcd.Endpoints(), 2, server.Config{Cluster: server.ClusterConfig{ElectionTTL: 3 * time.Second}})
	leader, follower := leaderAndFollower(t, nodes)

	ws := dialRPC(t, leader)
	g := rpcCall(t, ws, `{"id":1,"op":"acquire","resource":"r","holder":"a","leaseMs":60000}`)
	if g.Status != 200 || g.token() == 0 {
		t.Fatalf("acquire: %d %v", g.Status, g.Body)
	}
	// The Go client's stream, opened during the term too.
	gc := must(client.New(client.Config{URL: leader.url()}))
	t.Cleanup(func() { gc.Close() })
	if st, err := gc.State(context.Background(), "r"); err != nil || st.Holder != "a" {
		t.Fatalf("the Go client's State: %+v, %v", st, err)
	}
	sendRPC(t, ws, `{"id":2,"op":"acquire","resource":"r","holder":"b","leaseMs":60000,"waitMs":120000}`)
	servertest.Eventually(t, "b waits at the leader", func() bool {
		svc := leader.srv.Node.Service()
		return svc != nil && must(svc.Lock("r")).Waiters == 1
	})

	// The leader's term ends as when its session is lost: its lease goes.
	// The node lives on, a follower of the next leader.
	revokeLeaderLease(t, etcd.Endpoints(), "/"+t.Name()+"/", leader.self().ID)

	answers, code, reason := readRPCUntilClose(t, ws)
	if w, ok := answers[2]; !ok || w.Status != 503 || w.Body["code"] != "unavailable" {
		t.Fatalf("the waiter at the term's end: %v (answered: %v), want 503 unavailable", w, ok)
	}
	if len(answers) != 1 {
		t.Fatalf("answers after the term's end: %v, want only the waiter's", answers)
	}
	if code != websocket.CloseServiceRestart || reason != wire.ServiceEnded {
		t.Fatalf("the term's connection closed with %d %q (0: no close frame), want %d (service restart) %q",
			code, reason, websocket.CloseServiceRestart, wire.ServiceEnded)
	}

	servertest.Eventually(t, "the follower leads", follower.leading)
	// The Go client's next call goes on a new stream, to the next leader.
	if st, err := gc.State(context.Background(), "r"); err != nil || st.Holder != "a" || st.Token != g.token() {
		t.Fatalf("the Go client's State at the next leader: %+v, %v; want held by a with token %d", st, err, g.token())
	}
	// A client's next connection, through the node whose term ended.
	ws = dialRPC(t, leader)
	if r := rpcCall(t, ws, `{"id":1,"op":"renew","resource":"r","holder":"a"}`); r.Status != 200 || r.token() != g.token() {
		t.Fatalf("renew at the next leader: %d %v, want token %d", r.Status, r.Body, g.token())
	}
	if r := rpcCall(t, ws, `{"id":2,"op":"acquire","resource":"r","holder":"b","leaseMs":60000}`); r.Status == 200 {
		t.Fatalf("b acquired a lock a holds: %v", r.Body)
	}
	if r := rpcCall(t, ws, `{"id":3,"op":"release","resource":"r","holder":"a"}`); r.Status != 200 {
		t.Fatalf("release: %d %v", r.Status, r.Body)
	}
	if r := rpcCall(t, ws, `{"id":4,"op":"acquire","resource":"r","holder":"c","leaseMs":60000}`); r.Status != 200 || r.token() <= g.token() {
		t.Fatalf("acquire at the next leader: %d %v, want a token above %d", r.Status, r.Body, g.token())
	}
}

// revokeLeaderLease revokes the lease of the election key of the leader
// with id, ending its term.
func revokeLeaderLease(t *testing.T, endpoints []string, prefix, id string) {
	t.Helper()
	cli := must(clientv3.New(clientv3.Config{Endpoints: endpoints, Logger: zap.NewNop()}))
	defer cli.Close()
	ctx := context.Background()
	resp := must(cli.Get(ctx, prefix+"election/", clientv3.WithFirstCreate()...))
	var m struct{ ID string }
	if len(resp.Kvs) == 0 || json.Unmarshal(resp.Kvs[0].Value, &m) != nil || m.ID != id {
		t.Fatalf("the election's first key is not %s's: %v", id, resp.Kvs)
	}
	must(cli.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease)))
}

type rpcAnswer struct {
	ID     uint64         `json:"id"`
	Status int            `json:"status"`
	Body   map[string]any `json:"body"`
}

func (a rpcAnswer) token() int64 { return answer{Body: a.Body}.token() }

func dialRPC(t *testing.T, n *node) *websocket.Conn {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(n.url(), "http")+"/v1/rpc", nil)
	if err != nil {
		t.Fatalf("%s: /v1/rpc: %v", n.self().ID, err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

func sendRPC(t *testing.T, ws *websocket.Conn, line string) {
	t.Helper()
	if err := ws.WriteMessage(websocket.TextMessage, []byte(line)); err != nil {
		t.Fatal(err)
	}
}

// rpcCall sends one request and returns its answer.
func rpcCall(t *testing.T, ws *websocket.Conn, line string) rpcAnswer {
	t.Helper()
	sendRPC(t, ws, line)
	ws.SetReadDeadline(time.Now().Add(hangGuard))
	_, msg, err := ws.ReadMessage()
	if err != nil {
		t.Fatalf("answer to %s: %v", line, err)
	}
	var a rpcAnswer
	if err := json.Unmarshal(msg, &a); err != nil {
		t.Fatalf("answer to %s: %q: %v", line, msg, err)
	}
	return a
}

// readRPCUntilClose reads answers, by id, until the connection closes, and
// the close code and reason (0 when it broke without one).
func readRPCUntilClose(t *testing.T, ws *websocket.Conn) (answers map[uint64]rpcAnswer, code int, reason string) {
	t.Helper()
	answers = map[uint64]rpcAnswer{}
	ws.SetReadDeadline(time.Now().Add(hangGuard))
	for {
		_, msg, err := ws.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return answers, ce.Code, ce.Text
			}
			return answers, 0, ""
		}
		for _, line := range bytes.Split(msg, []byte("\n")) {
			var a rpcAnswer
			if err := json.Unmarshal(line, &a); err != nil {
				t.Fatalf("answer %q: %v", line, err)
			}
			answers[a.ID] = a
		}
	}
}
