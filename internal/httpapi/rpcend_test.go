package httpapi

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview/internal/auth"
)

// closingHeld is heldGrant over a service that says when it closes, as
// issuer.Service does.
type closingHeld struct {
	*heldGrant
	closing <-chan struct{}
}

func (c closingHeld) Closing() <-chan struct{} { return c.closing }

// An RPC connection does not outlive the service it reaches (a cluster
// leader's term ends with its service): when the service closes, the
// connection answers every request it took, a grant committed as the
// service closed included, and then closes with 1012 (service restart),
// so its client reconnects to whoever serves now instead of hearing 503
// for every later call.
func TestRPCConnectionEndsWithItsService(t *testing.T) {
	s, srv, svc, keys, queued := waitersAPI(t)
	held := &heldGrant{Services: svc, granted: make(chan struct{}), proceed: make(chan struct{})}
	s.Service = closingHeld{heldGrant: held, closing: svc.Closing()}
	ending := make(chan struct{})
	s.rpcEnding = func() { close(ending) }
	_, secret := newKey(t, keys, "waiting", auth.Client)
	for _, lock := range []string{"g", "h"} {
		if status, a := call(t, srv, "POST", "/v1/locks/"+lock+"/acquire", "admin-token", `{"holder":"owner","leaseMs":600000}`); status != 200 {
			t.Fatalf("the holder's acquire of %s: %d %v", lock, status, a)
		}
	}
	ws := dialRPC(t, srv.URL, secret)
	if err := ws.WriteMessage(websocket.TextMessage, []byte(
		`{"id":1,"op":"acquire","resource":"g","holder":"waiter","leaseMs":600000,"waitMs":300000}`+"\n"+
			`{"id":2,"op":"acquire","resource":"h","holder":"other","leaseMs":600000,"waitMs":300000}`)); err != nil {
		t.Fatal(err)
	}
	<-queued
	<-queued
	if status, a := call(t, srv, "POST", "/v1/locks/g/release", "admin-token", `{"holder":"owner"}`); status != 200 {
		t.Fatalf("the holder's release: %d %v", status, a)
	}
	<-held.granted // committed; its answer is on its way
	svc.Close()    // refuses the other waiter
	// The writer takes the service's end before the grant's answer comes.
	select {
	case <-ending:
	case <-time.After(30 * time.Second): // hang guard
		t.Fatal("the connection did not end with its service")
	}
	close(held.proceed)
	got, code := readToClose(t, ws)
	var grant struct{ Fencing struct{ Token int64 } }
	if a := got[1]; a.Status != 200 || json.Unmarshal(a.Body, &grant) != nil || grant.Fencing.Token == 0 {
		t.Fatalf("the waiter granted as the service closed: %d %s; want its grant", a.Status, a.Body)
	}
	var refused struct{ Code string }
	if a := got[2]; a.Status != 503 || json.Unmarshal(a.Body, &refused) != nil || refused.Code != "unavailable" {
		t.Fatalf("the waiter the closed service refused: %d %s; want 503 unavailable", a.Status, a.Body)
	}
	if code != websocket.CloseServiceRestart {
		t.Fatalf("closed with %d, want %d (service restart)", code, websocket.CloseServiceRestart)
	}
	if ls, _ := svc.Lock("g"); ls.Holder != "waiter" {
		t.Fatalf("the lock: %+v, want held by the waiter told of it", ls)
	}
}
