package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/fair"
)

// admissionAPI is a test API with auth on, two client keys, and the
// admission control cfg (its clock fixed: no estimate of service time, so
// only the bounds shed).
type admissionAPI struct {
	s        *Server
	srv      *httptest.Server
	d        *fair.Dispatcher
	a, b     auth.Key
	aKey     string
	bKey     string
	overload *Overload
}

func newAdmissionAPI(t *testing.T, cfg fair.Config, maxWaiters int) *admissionAPI {
	t.Helper()
	s := newTestAPI(t)
	keys := withKeyring(t, s, s.History.(auth.Store), "admin")
	x := &admissionAPI{s: s}
	x.a, x.aKey = newKey(t, keys, "a", auth.Client)
	x.b, x.bKey = newKey(t, keys, "b", auth.Client)
	cfg.Now = func() time.Time { return time.Unix(1_700_000_000, 0) }
	x.d = fair.NewDispatcher(cfg)
	x.overload = &Overload{Dispatcher: x.d, MaxWaitersPerKey: maxWaiters}
	s.Overload = x.overload
	x.srv = httptest.NewServer(s)
	t.Cleanup(x.srv.Close)
	return x
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
}

func (x *admissionAPI) post(t *testing.T, key, path string, body any) answer {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", x.srv.URL+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return answer{}
	}
	defer res.Body.Close()
	var a answer
	a.status, a.header = res.StatusCode, res.Header
	json.NewDecoder(res.Body).Decode(&a.body)
	return a
}

// until yields until cond holds: the goroutines it waits for are parked
// on a queue the test can see, not on a timer.
func until(cond func() bool) {
	for !cond() {
		runtime.Gosched()
	}
}

// A key at its share with its queue full is answered 429 overloaded at
// once, with Retry-After and retryAfterMs, and its request changes
// nothing; another key is still served; the queued request is served when
// a seat frees.
func TestShedAnswersOverloaded(t *testing.T) {
	x := newAdmissionAPI(t, fair.Config{Seats: 2, LeaseSeats: 1, FlowQueue: 1, TotalQueue: 4, MaxWait: time.Hour}, 10)
	// The key's request in service: the one seat of new work.
	seat, err := x.d.Acquire(context.Background(), "key:"+x.a.ID, fair.New, costCommit)
	if err != nil {
		t.Fatal(err)
	}
	defer seat.Done(0) // a no-op once done: frees the queued request if the test fails first
	queued := make(chan answer)
	go func() {
		queued <- x.post(t, x.aKey, "/v1/locks/q/acquire", map[string]any{"holder": "h"})
	}()
	until(func() bool { return x.d.Stats().Queued == 1 })

	shed := x.post(t, x.aKey, "/v1/locks/s/acquire", map[string]any{"holder": "h"})
	if shed.status != http.StatusTooManyRequests || shed.body["code"] != "overloaded" {
		t.Fatalf("over the key's queue: %d %v, want 429 overloaded", shed.status, shed.body)
	}
	ms, _ := shed.body["retryAfterMs"].(float64)
	if ms <= 0 || shed.header.Get("Retry-After") == "" || shed.header.Get("Retry-After") == "0" {
		t.Fatalf("shed without a time to retry: retryAfterMs %v, Retry-After %q", shed.body["retryAfterMs"], shed.header.Get("Retry-After"))
	}
	if _, err := x.s.Service.Resource("s"); err == nil {
		t.Fatal("the shed acquire changed something: resource s exists")
	}
	// The lease level has its own seat: a renew of another key is not
	// behind the queue (it is refused, not-held, by the lock itself).
	if r := x.post(t, x.bKey, "/v1/locks/q2/renew", map[string]any{"holder": "h"}); r.status == http.StatusTooManyRequests {
		t.Fatalf("a renew of another key: %d %v", r.status, r.body)
	}
	seat.Done(0)
	if r := <-queued; r.status != http.StatusOK {
		t.Fatalf("the queued acquire, once a seat freed: %d %v", r.status, r.body)
	}
}

// Waiting acquires (waitMs > 0) hold no seat while they wait, and one key
// has at most --max-waiters-per-key of them: the next is refused 429
// limit, while another key may still wait.
func TestWaitersPerKey(t *testing.T) {
	x := newAdmissionAPI(t, fair.Config{Seats: 2, LeaseSeats: 1, FlowQueue: 4, TotalQueue: 8, MaxWait: time.Hour}, 1)
	if r := x.post(t, x.aKey, "/v1/locks/w/acquire", map[string]any{"holder": "owner", "leaseMs": 600000}); r.status != 200 {
		t.Fatalf("acquire: %d %v", r.status, r.body)
	}
	waited := make(chan answer, 2)
	go func() {
		waited <- x.post(t, x.aKey, "/v1/locks/w/acquire", map[string]any{"holder": "next", "waitMs": 60000})
	}()
	until(func() bool { return x.overload.Waiting(x.a.ID, "") == 1 && x.d.Stats().InUse == 0 })
	r := x.post(t, x.aKey, "/v1/locks/w/acquire", map[string]any{"holder": "third", "waitMs": 60000})
	if r.status != http.StatusTooManyRequests || r.body["code"] != "limit" || !strings.Contains(r.body["error"].(string), "--max-waiters-per-key") {
		t.Fatalf("a second waiter of the key: %d %v, want 429 limit", r.status, r.body)
	}
	if r := x.post(t, x.aKey, "/v1/semaphores/jobs/acquire", map[string]any{"holder": "third", "permits": 1, "waitMs": 1000}); r.status != http.StatusTooManyRequests {
		t.Fatalf("a semaphore waiter of the key: %d %v, want 429", r.status, r.body)
	}
	go func() {
		waited <- x.post(t, x.bKey, "/v1/locks/w/acquire", map[string]any{"holder": "other", "waitMs": 60000})
	}()
	until(func() bool { return x.overload.Waiting(x.b.ID, "") == 1 })
	if r := x.post(t, x.aKey, "/v1/locks/w/release", map[string]any{"holder": "owner"}); r.status != 200 {
		t.Fatalf("release: %d %v", r.status, r.body)
	}
	if r := <-waited; r.status != 200 {
		t.Fatalf("the first waiter: %d %v", r.status, r.body)
	}
	x.post(t, x.aKey, "/v1/locks/w/release", map[string]any{"holder": "next"})
	if r := <-waited; r.status != 200 {
		t.Fatalf("the other key's waiter: %d %v", r.status, r.body)
	}
	if n := x.overload.Waiting(x.a.ID, ""); n != 0 {
		t.Fatalf("waiters left counted: %d", n)
	}
}

// Over RPC, an acquire with waitMs > 0 takes one of its key's in-flight
// slots like any request (it used to skip them), and counts against the
// key's waiters.
func TestRPCWaitingAcquireIsCounted(t *testing.T) {
	x := newAdmissionAPI(t, fair.Config{Seats: 4, LeaseSeats: 1, FlowQueue: 4, TotalQueue: 8, MaxWait: time.Hour}, 1)
	full := make(chan struct{}, 1)
	x.s.slotFull = func() {
		select {
		case full <- struct{}{}:
		default:
		}
	}
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(x.srv.URL, "http")+"/v1/rpc",
		http.Header{"Authorization": {"Bearer " + x.aKey}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	answers := make(chan map[string]any, 8)
	go func() {
		for {
			_, msg, err := ws.ReadMessage()
			if err != nil {
				close(answers)
				return
			}
			for line := range bytes.SplitSeq(msg, []byte("\n")) {
				var a map[string]any
				json.Unmarshal(line, &a)
				answers <- a
			}
		}
	}()
	send := func(line string) {
		if err := ws.WriteMessage(websocket.TextMessage, []byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	// The key's slots, all taken (by the test, as requests in flight).
	sem := x.s.keySlots.open(x.a.ID)
	defer x.s.keySlots.close(x.a.ID)
	for range cap(sem) {
		sem <- struct{}{}
	}
	send(`{"id":1,"op":"acquire","resource":"v","holder":"owner","leaseMs":600000,"waitMs":5000}`)
	select {
	case <-full:
	case a := <-answers:
		t.Fatalf("a waiting acquire answered while its key had no slot free: %v", a)
	}
	<-sem
	if a := <-answers; a["status"] != float64(200) {
		t.Fatalf("the waiting acquire once a slot freed: %v", a)
	}
	for len(sem) > 0 {
		<-sem
	}
	// One waiter per key: the second waits, the third is refused.
	send(`{"id":2,"op":"acquire","resource":"v","holder":"next","waitMs":60000}`)
	until(func() bool { return x.overload.Waiting(x.a.ID, "") == 1 })
	send(`{"id":3,"op":"semaphore-acquire","name":"jobs","holder":"third","permits":1,"waitMs":60000}`)
	a := <-answers
	body, _ := a["body"].(map[string]any)
	if a["id"] != float64(3) || a["status"] != float64(http.StatusTooManyRequests) || body["code"] != "limit" {
		t.Fatalf("a second waiter of the key over RPC: %v, want 429 limit", a)
	}
	send(`{"id":4,"op":"release","resource":"v","holder":"owner"}`)
	got := map[float64]float64{}
	for range 2 {
		a := <-answers
		got[a["id"].(float64)] = a["status"].(float64)
	}
	if got[2] != 200 || got[4] != 200 {
		t.Fatalf("release and the waiter's grant: %v", got)
	}
}
