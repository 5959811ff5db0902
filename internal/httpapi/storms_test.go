package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/auth"
)

// keyedAPI is a server with auth on (admin token "admin-token") over a
// real service, and the service.
func keyedAPI(t *testing.T) (*Server, *httptest.Server, *auth.Keyring) {
	t.Helper()
	svc, db, keys := newKeyedService(t, "storms")
	s := New(svc, db, nil)
	s.Auth = keys
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv, keys
}

// call sends body to path with secret and returns the status and the
// JSON answer.
func call(t *testing.T, srv *httptest.Server, method, path, secret, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out
}

// enteredAcquire says when an acquire reaches the service.
type enteredAcquire struct {
	fenceview.Services
	entered chan struct{}
}

func (e *enteredAcquire) Acquire(ctx context.Context, req fenceview.AcquireRequest) (fenceview.Grant, error) {
	e.entered <- struct{}{}
	return e.Services.Acquire(ctx, req)
}

// A key revoked while its HTTP acquire waited for a held lock still got
// the lock, signed, after the revocation answered 200 (over RPC the wait
// ended with the revocation). The revocation now ends the wait: the
// acquire is answered 401, and the lock, released, is granted to nobody.
func TestRevocationEndsAWaitingHTTPAcquire(t *testing.T) {
	s, srv, keys := keyedAPI(t)
	ctx := context.Background()
	key, secret, err := keys.Create(ctx, "waiter", auth.Client, nil)
	if err != nil {
		t.Fatal(err)
	}
	svc := s.Service
	if _, err := svc.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: "owner", Lease: time.Hour}); err != nil {
		t.Fatal(err)
	}
	entered := &enteredAcquire{Services: svc, entered: make(chan struct{}, 1)}
	s.Service = entered
	type answer struct {
		status int
		body   map[string]any
	}
	done := make(chan answer, 1)
	go func() {
		status, body := call(t, srv, "POST", "/v1/locks/r/acquire", secret, `{"holder":"w","leaseMs":60000,"waitMs":60000}`)
		done <- answer{status, body}
	}()
	<-entered.entered
	if status, body := call(t, srv, "DELETE", "/v1/auth/keys/"+key.ID, "admin-token", ""); status != 200 {
		t.Fatalf("revoke: %d %v", status, body)
	}
	if _, err := svc.Release(ctx, "r", "owner"); err != nil {
		t.Fatal(err)
	}
	var a answer
	select {
	case a = <-done:
	case <-time.After(30 * time.Second): // a hang guard: before the fix it waited its minute
		t.Fatal("the revoked key's acquire still waits")
	}
	if a.status != http.StatusUnauthorized {
		t.Fatalf("the revoked key's acquire: %d %v, want 401", a.status, a.body)
	}
	if ls, _ := svc.Lock("r"); ls.Locked {
		t.Fatalf("the lock after the revocation: %+v", ls)
	}
}

// A guard key could not open /v1/rpc (403), although the stream carries
// fences. It opens it now; its fences are served and every op its role
// does not allow is refused on its own with 403, the stream staying open.
func TestGuardKeyFencesOverRPC(t *testing.T) {
	s, srv, keys := keyedAPI(t)
	ctx := context.Background()
	if _, err := s.Service.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: "owner", Lease: time.Hour}); err != nil {
		t.Fatal(err)
	}
	_, secret, err := keys.Create(ctx, "g", auth.Guard, nil)
	if err != nil {
		t.Fatal(err)
	}
	ws := dialRPC(t, srv.URL, secret) // a guard key may open it
	msg := `{"id":1,"op":"fence","resource":"r","token":1}` + "\n" +
		`{"id":2,"op":"acquire","resource":"r","holder":"g"}` + "\n" +
		`{"id":3,"op":"semaphore-acquire","name":"jobs","holder":"g","permits":2}` + "\n" +
		`{"id":4,"op":"lock","resource":"r"}`
	want := map[uint64]int{1: 200, 2: 403, 3: 403, 4: 200}
	if got := rpcAnswers(t, ws, msg, len(want)); !maps.Equal(got, want) {
		t.Fatalf("answers %v, want statuses %v", got, want)
	}
	if ls, _ := s.Service.Lock("r"); ls.Holder != "owner" {
		t.Fatalf("the guard's refused acquire changed the lock: %+v", ls)
	}
}

// A key that sees one slot of a semaphore learned its permits from the
// "permits mismatch" answer. It now gets 403, as it would asking with the
// right count, and never the count; a key that sees every slot still gets
// the mismatch with the count.
func TestPermitsMismatchHidesTheCountFromAPartialKey(t *testing.T) {
	s, srv, keys := keyedAPI(t)
	ctx := context.Background()
	if _, err := s.Service.SetPermits(ctx, "jobs", 4); err != nil {
		t.Fatal(err)
	}
	_, partial, err := keys.Create(ctx, "slot-0", auth.Client, []string{"jobs#0"})
	if err != nil {
		t.Fatal(err)
	}
	_, whole, err := keys.Create(ctx, "all", auth.Client, []string{"jobs"})
	if err != nil {
		t.Fatal(err)
	}
	for _, permits := range []string{"1", "2", "4", "5"} {
		status, body := call(t, srv, "POST", "/v1/semaphores/jobs/acquire", partial, `{"holder":"p","permits":`+permits+`}`)
		if status != http.StatusForbidden || body["permits"] != nil || strings.Contains(body["error"].(string), "4") {
			t.Fatalf("permits %s by a key seeing jobs#0 only: %d %v", permits, status, body)
		}
	}
	status, body := call(t, srv, "POST", "/v1/semaphores/jobs/acquire", whole, `{"holder":"w","permits":1}`)
	if status != http.StatusConflict || body["permits"] != float64(4) {
		t.Fatalf("a key seeing every slot: %d %v", status, body)
	}
}

// A message over 1 MiB was applied line by line until the read limit
// ended it: its first requests were committed, then the connection was
// closed. A message is now read whole first, so one over the limit
// changes nothing.
func TestRPCMessageOverTheLimitChangesNothing(t *testing.T) {
	s := newTestAPI(t)
	served := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.ServeHTTP(w, r)
		if r.URL.Path == "/v1/rpc" {
			served <- struct{}{} // the connection's requests are all done
		}
	}))
	defer srv.Close()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/v1/rpc",
		http.Header{"Authorization": {"Bearer admin"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	msg := []byte(`{"id":1,"op":"acquire","resource":"big-1","holder":"a"}` + "\n" +
		`{"id":2,"op":"fence","resource":"big-2","token":5}` + "\n")
	pad := []byte(strings.Repeat(" ", 1000) + "\n") // blank lines: nothing to serve
	for len(msg) <= rpcMaxMessage {
		msg = append(msg, pad...)
	}
	if err := ws.WriteMessage(websocket.TextMessage, msg); err != nil {
		t.Fatal(err)
	}
	ws.SetReadDeadline(time.Now().Add(30 * time.Second)) // hang guard
	for {
		if _, data, err := ws.ReadMessage(); err != nil {
			break // closed for the message's size
		} else {
			t.Logf("answer: %s", data)
		}
	}
	<-served
	if ls, _ := s.Service.Lock("big-1"); ls.Locked {
		t.Fatalf("a request of the refused message was applied: %+v", ls)
	}
	if _, err := s.Service.Resource("big-2"); fenceview.ErrorCode(err) != fenceview.ENOTFOUND {
		t.Fatalf("the refused message's fence was recorded: %v", err)
	}
}

// heldFence holds each fence at the service until let go.
type heldFence struct {
	fenceview.Services
	entered, proceed chan struct{}
}

func (h *heldFence) Fence(ctx context.Context, f fenceview.Fence) (guard.Decision, error) {
	h.entered <- struct{}{}
	<-h.proceed
	return h.Services.Fence(ctx, f)
}

// A JSON fence never waits for a lock, so it enters the gate without a
// cancel of its own; revoking its key still waits for it, and a fence the
// key sends once revoked is refused without reaching the service.
func TestRevocationWaitsForAFenceInFlight(t *testing.T) {
	s, srv, keys := keyedAPI(t)
	ctx := context.Background()
	g, err := s.Service.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: "owner", Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	key, secret, err := keys.Create(ctx, "writer", auth.Client, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := keys.Principal(key.ID)
	if err != nil {
		t.Fatal(err)
	}
	held := &heldFence{Services: s.Service, entered: make(chan struct{}, 2), proceed: make(chan struct{})}
	s.Service = held
	letGo := sync.OnceFunc(func() { close(held.proceed) })
	t.Cleanup(letGo) // before the server's Close, which waits for the fence
	body := fmt.Sprintf(`{"token":%d}`, g.Fencing.Token)
	fenced := make(chan int, 1)
	go func() {
		status, _ := call(t, srv, "POST", "/v1/fence/r", secret, body)
		fenced <- status
	}()
	<-held.entered
	s.ops.mu.Lock()
	in := s.ops.keys[key.ID]
	s.ops.mu.Unlock()
	if in == nil || in.n != 1 {
		t.Fatalf("the gate's count of the key's operations with a fence in flight: %+v, want 1", in)
	}
	revoked := make(chan int, 1)
	go func() {
		status, _ := call(t, srv, "DELETE", "/v1/auth/keys/"+key.ID, "admin-token", "")
		revoked <- status
	}()
	<-p.Revoked()
	if status, body := call(t, srv, "POST", "/v1/fence/r", secret, body); status != http.StatusUnauthorized {
		t.Fatalf("a fence of the revoked key: %d %v, want 401", status, body)
	}
	select {
	case status := <-revoked:
		t.Fatalf("the revocation answered %d while a fence of its key was in flight", status)
	default:
	}
	letGo()
	if status := <-fenced; status != http.StatusOK {
		t.Fatalf("the fence in flight: %d, want 200", status)
	}
	if status := <-revoked; status != http.StatusOK {
		t.Fatalf("revoke: %d", status)
	}
	if len(held.entered) != 0 {
		t.Fatal("the revoked key's second fence reached the service")
	}
}
