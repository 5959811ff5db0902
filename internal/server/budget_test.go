package server_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview/internal/server"
	"github.com/fenceview/fenceview/internal/servertest"
)

// The documented budget of one RPC connection (docs/security.md, "Memory
// per connection"), by counting: the heap and stacks the server holds for
// conns connections at their busiest state that stays open (every worker
// started, the line buffer in use, and then every waiting acquire it may
// have), divided by conns.
const (
	budgetPerConn   = 512 << 10 // bytes of a connection, its waiters and queued answers aside
	budgetPerWaiter = 16 << 10  // bytes of one waiting acquire
)

func memInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

func TestRPCConnectionMemoryBudget(t *testing.T) {
	const conns = 32 // 8,192 waiters, under the default --max-waiters
	// One key has them all: its own cap (--max-waiters-per-key) is raised.
	s := servertest.Start(t, server.Config{AdminToken: admin, Limits: server.Limits{MaxWaitersPerKey: conns * rpcMaxWaitingForTest}})
	_, cli := newKey(t, s, "busy", "client")
	call(t, nil, "POST", s.URL()+"/v1/locks/held/acquire", admin, acquireBody("owner"))
	baseMem, baseG := memInUse(), goroutines()
	var ws []*websocket.Conn
	var work strings.Builder // more requests than workers, the longest lines allowed among them
	for i := range 200 {
		fmt.Fprintf(&work, `{"id":%d,"op":"lock","resource":"r-%d","source":"%s"}`+"\n", i+1, i, strings.Repeat("s", 60<<10*b2i(i%20 == 0)))
	}
	for range conns {
		c := openStream(t, s, "/v1/rpc", cli)
		ws = append(ws, c)
		if err := c.WriteMessage(websocket.TextMessage, []byte(work.String())); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range ws {
		for got := 0; got < 200; {
			_, m, err := c.ReadMessage()
			if err != nil {
				t.Fatal(err)
			}
			got += strings.Count(string(m), "\n") + 1
		}
	}
	connMem, connG := memInUse(), goroutines()
	var waits strings.Builder
	for i := range rpcMaxWaitingForTest {
		fmt.Fprintf(&waits, `{"id":%d,"op":"acquire","resource":"held","holder":"w%d","waitMs":300000}`+"\n", 1000+i, i)
	}
	for _, c := range ws {
		if err := c.WriteMessage(websocket.TextMessage, []byte(waits.String())); err != nil {
			t.Fatal(err)
		}
	}
	servertest.Eventually(t, "every acquire waiting", func() bool { return s.Service.Metrics().Waiters == conns*rpcMaxWaitingForTest })
	waitMem, waitG := memInUse(), goroutines()
	perConn := (int64(connMem) - int64(baseMem)) / conns
	perWaiter := (int64(waitMem) - int64(connMem)) / (conns * rpcMaxWaitingForTest)
	t.Logf("per connection: %d bytes, %d goroutines; per waiting acquire: %d bytes, %.2f goroutines",
		perConn, (connG-baseG)/conns, perWaiter, float64(waitG-connG)/(conns*rpcMaxWaitingForTest))
	if !raceEnabled && (perConn > budgetPerConn || perWaiter > budgetPerWaiter) {
		t.Fatalf("per connection %d bytes (budget %d), per waiter %d bytes (budget %d)", perConn, budgetPerConn, perWaiter, budgetPerWaiter)
	}
	if g := (connG - baseG) / conns; g > 2+64 {
		t.Fatalf("%d goroutines per connection, budget reader + writer + 64 workers", g)
	}
	if g := waitG - connG; g > conns*rpcMaxWaitingForTest {
		t.Fatalf("%d goroutines for %d waiting acquires", g, conns*rpcMaxWaitingForTest)
	}
}

// rpcMaxWaitingForTest is httpapi's per-connection bound of waiting acquires.
const rpcMaxWaitingForTest = 256

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
