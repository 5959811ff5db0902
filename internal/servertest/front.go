package servertest

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview/internal/wire"
)

// ClosingFront serves target's API on 127.0.0.1:0 (the JSON API proxied,
// the RPC stream relayed message by message), except that the first RPC
// connection is closed with code 1012 and reason once it has read one
// message, which is never answered nor passed on. With wire.ServiceEnded
// as the reason it is a cluster leader whose term ended under a call;
// with another, something on the way (a proxy) restarting. Later
// connections are relayed. It returns the front's URL; it is closed when
// the test ends.
func ClosingFront(t testing.TB, target, reason string) string {
	t.Helper()
	base, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(base)
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	var mu sync.Mutex
	first := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/rpc" || !websocket.IsWebSocketUpgrade(r) {
			proxy.ServeHTTP(w, r)
			return
		}
		mu.Lock()
		closing := first
		first = false
		mu.Unlock()
		if closing {
			conn, err := up.Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer conn.Close()
			if _, _, err := conn.ReadMessage(); err != nil {
				return
			}
			conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseServiceRestart, reason), time.Now().Add(10*time.Second))
			conn.ReadMessage() // until the client's close, or the connection ends
			return
		}
		relay(w, r, up, "ws"+strings.TrimPrefix(target, "http")+"/v1/rpc")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// relay connects the websocket r asks for to the one at to (with r's
// credential) and passes messages both ways, and a close as it came.
func relay(w http.ResponseWriter, r *http.Request, up websocket.Upgrader, to string) {
	h := http.Header{}
	if a := r.Header.Get("Authorization"); a != "" {
		h.Set("Authorization", a)
	}
	back, resp, err := websocket.DefaultDialer.Dial(to, h)
	if err != nil {
		status := http.StatusBadGateway
		if resp != nil {
			status = resp.StatusCode
		}
		http.Error(w, err.Error(), status)
		return
	}
	defer back.Close()
	front, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer front.Close()
	done := make(chan struct{}, 2)
	pass := func(from, to *websocket.Conn) {
		defer func() { done <- struct{}{} }()
		for {
			kind, msg, err := from.ReadMessage()
			if err != nil {
				code, text := websocket.CloseGoingAway, ""
				var ce *websocket.CloseError
				if errors.As(err, &ce) && ce.Code != websocket.CloseAbnormalClosure {
					code, text = ce.Code, ce.Text // 1006 names a close without a frame: not sent
				}
				to.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(10*time.Second))
				return
			}
			if err := to.WriteMessage(kind, msg); err != nil {
				return
			}
		}
	}
	go pass(front, back)
	go pass(back, front)
	<-done
	// Either side's end ends both: the other pass returns once its conn is closed.
	front.Close()
	back.Close()
	<-done
}

// ClosingFronts are two ClosingFronts of target: ended closes with
// wire.ServiceEnded, so a client sends the call it left unanswered again
// on a new connection; restarted closes with code 1012 for another reason
// (a proxy restarting), which says nothing of what the server took, so the
// call fails as on any broken connection.
func ClosingFronts(t testing.TB, target string) (ended, restarted string) {
	t.Helper()
	return ClosingFront(t, target, wire.ServiceEnded), ClosingFront(t, target, "a proxy on the way is restarting")
}
