package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/fair"
)

// rpcAnswers sends msg over ws and reads n answers: status by id.
func rpcAnswers(t *testing.T, ws *websocket.Conn, msg string, n int) map[uint64]int {
	t.Helper()
	if err := ws.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	return readAnswers(t, ws, n)
}

// readAnswers reads n answers from ws: status by id.
func readAnswers(t *testing.T, ws *websocket.Conn, n int) map[uint64]int {
	t.Helper()
	got := map[uint64]int{}
	for len(got) < n {
		_, data, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("after %d answers: %v", len(got), err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			var a struct {
				ID     uint64
				Status int
			}
			if err := json.Unmarshal([]byte(line), &a); err != nil {
				t.Fatal(err)
			}
			got[a.ID] = a.Status
		}
	}
	return got
}

func dialRPC(t *testing.T, url, secret string) *websocket.Conn {
	t.Helper()
	ws, res, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(url, "http")+"/v1/rpc",
		http.Header{"Authorization": {"Bearer " + secret}})
	if err != nil {
		t.Fatalf("dial /v1/rpc: %v %v", res, err)
	}
	t.Cleanup(func() { ws.Close() })
	ws.SetReadDeadline(time.Now().Add(30 * time.Second)) // hang guard
	return ws
}

// The RPC stream's lock operations and fences that never wait are served
// without a goroutine each: a message of 64 of them leaves no worker
// behind (a worker, once started, lives as long as its connection), and
// every one is answered as the JSON API would answer it.
func TestRPCServesChangesWithoutAGoroutineEach(t *testing.T) {
	_, srv, keys := keyedAPI(t)
	_, secret := newKey(t, keys, "c", auth.Client)
	ws := dialRPC(t, srv.URL, secret)
	// One request first: the connection's reader and writer are running.
	if got := rpcAnswers(t, ws, `{"id":1,"op":"fence","resource":"warm","token":1}`, 1); got[1] != 200 {
		t.Fatalf("the first fence: %v", got)
	}
	before := runtime.NumGoroutine()
	var lines []string
	want := map[uint64]int{}
	for i := range 16 {
		id := uint64(100 + 4*i)
		r := fmt.Sprintf("r%d", i)
		lines = append(lines,
			fmt.Sprintf(`{"id":%d,"op":"acquire","resource":%q,"holder":"h","leaseMs":60000}`, id, r),
			fmt.Sprintf(`{"id":%d,"op":"fence","resource":%q,"token":1}`, id+1, r),
			fmt.Sprintf(`{"id":%d,"op":"renew","resource":%q,"holder":"other"}`, id+2, r), // not the holder: 409
			fmt.Sprintf(`{"id":%d,"op":"fence","resource":"elsewhere%d","token":%d}`, id+3, i, i+1))
		want[id], want[id+1], want[id+2], want[id+3] = 200, 200, 409, 200
	}
	got := rpcAnswers(t, ws, strings.Join(lines, "\n"), len(want))
	for id, status := range want {
		if got[id] != status {
			t.Errorf("request %d: %d, want %d", id, got[id], status)
		}
	}
	if grew := runtime.NumGoroutine() - before; grew > 8 {
		t.Fatalf("%d goroutines more after 64 requests were answered: a worker per request", grew)
	}
}

// With every seat taken, the stream's requests queue for one without a
// goroutine each, and are served, in turn, as seats free.
func TestRPCChangesQueueForASeat(t *testing.T) {
	s, srv, keys := keyedAPI(t)
	var queued atomic.Int64
	s.Overload = &Overload{Dispatcher: fair.NewDispatcher(fair.Config{Seats: 2, LeaseSeats: 1, FlowQueue: 100, TotalQueue: 100}),
		ObserveQueueWait: func(_ string, waited time.Duration) {
			if waited > 0 {
				queued.Add(1)
			}
		}}
	_, secret := newKey(t, keys, "c", auth.Client)
	ws := dialRPC(t, srv.URL, secret)
	var lines []string
	for i := range 40 {
		lines = append(lines, fmt.Sprintf(`{"id":%d,"op":"fence","resource":"q%d","token":1}`, i+1, i))
	}
	got := rpcAnswers(t, ws, strings.Join(lines, "\n"), 40)
	for id := range uint64(40) {
		if got[id+1] != 200 {
			t.Fatalf("fence %d: %d, want 200 (answers %v)", id+1, got[id+1], got)
		}
	}
	if queued.Load() == 0 {
		t.Fatal("no fence queued for a seat: the test did not test that")
	}
	if st := s.Overload.Dispatcher.Stats(); st.InUse != 0 || st.Queued != 0 {
		t.Fatalf("seats after every answer: %+v", st)
	}
}

// A client busy sending a burst is not cut off for the answers it has not
// read yet: while the writer cannot send (held here, as a full socket
// would hold it), the reader stops taking requests once rpcAnswerRoom
// answers wait, instead of queueing answers until the connection is
// dropped; once the writer sends again, every request is answered.
func TestRPCReaderWaitsForTheWriterInABurst(t *testing.T) {
	// A paused reader's connection still has its requests in flight to
	// answer: they must fit in the queue, or a burst is dropped anyway.
	if rpcAnswerRoom+2*rpcWorkers > rpcAnswerQueue {
		t.Fatalf("room %d + %d in flight > a queue of %d", rpcAnswerRoom, 2*rpcWorkers, rpcAnswerQueue)
	}
	s, srv, keys := keyedAPI(t)
	_, secret := newKey(t, keys, "c", auth.Client)
	var hold atomic.Bool
	held, waited := make(chan struct{}), make(chan struct{}, 1)
	s.rpcBeforeFlush = func() {
		if hold.Load() {
			<-held
		}
	}
	s.rpcReaderWaits = func() {
		select {
		case waited <- struct{}{}:
		default:
		}
	}
	ws := dialRPC(t, srv.URL, secret)
	if got := rpcAnswers(t, ws, `{"id":1,"op":"fence","resource":"warm","token":1}`, 1); got[1] != 200 {
		t.Fatalf("the first fence: %v", got)
	}
	hold.Store(true)
	const n = 4 * rpcAnswerQueue // far more than the queue holds
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf(`{"id":%d,"op":"fence","resource":"b%d","token":1}`, i+2, i%100))
	}
	if err := ws.WriteMessage(websocket.TextMessage, []byte(strings.Join(lines, "\n"))); err != nil {
		t.Fatal(err)
	}
	select {
	case <-waited:
	case <-time.After(30 * time.Second): // hang guard
		t.Fatal("the reader never waited for the writer")
	}
	close(held)
	got := readAnswers(t, ws, n)
	for id, status := range got {
		if status != 200 {
			t.Fatalf("fence %d: %d, want 200", id, status)
		}
	}
}
