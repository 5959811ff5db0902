package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/client/fenceviewtest"
)

// shedding is a proxy in front of the real server that sheds the first
// answers of calls for which shed says so: the first with a Retry-After
// header of 2 s (retryAfterMs over RPC), the second with retryAfterMs
// 700 and no header (as a 429 overloaded of the server's, which changed
// nothing), then lets them through; status 503 sheds two with Retry-After
// 1 s. Over the RPC stream it answers the shed request lines itself
// and passes the others on.
func shedding(t *testing.T, srv *fenceviewtest.Server, status int, shed func(path, line string) bool) string {
	target, _ := url.Parse(srv.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	n := 0
	next := func() (header http.Header, body string, ok bool) {
		mu.Lock()
		defer mu.Unlock()
		if n++; n > 2 {
			return nil, "", false
		}
		if n == 1 {
			return http.Header{"Retry-After": {"2"}}, `{"error":"x","code":"overloaded"}`, true
		}
		return nil, `{"error":"x","code":"overloaded","retryAfterMs":700}`, true
	}
	if status == http.StatusServiceUnavailable {
		next = func() (http.Header, string, bool) {
			mu.Lock()
			defer mu.Unlock()
			if n++; n > 2 {
				return nil, "", false
			}
			return http.Header{"Retry-After": {"1"}}, `{"error":"x","code":"unavailable"}`, true
		}
	}
	up := websocket.Upgrader{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/rpc" {
			relayRPC(t, srv, up, w, r, status, func(line string) (string, bool) {
				if !shed("/v1/rpc", line) {
					return "", false
				}
				h, body, ok := next()
				if s := h.Get("Retry-After"); s != "" {
					// The stream has no headers: the answer says it.
					body = strings.TrimSuffix(body, "}") + `,"retryAfterMs":` + s + `000}`
				}
				return body, ok
			})
			return
		}
		if shed(r.URL.Path, "") {
			if h, body, ok := next(); ok {
				for k, v := range h {
					w.Header()[k] = v
				}
				w.WriteHeader(status)
				w.Write([]byte(body))
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// relayRPC passes request lines on to the real server's RPC stream, one
// message each, and its answers back, except the lines answer answers.
func relayRPC(t *testing.T, srv *fenceviewtest.Server, up websocket.Upgrader, w http.ResponseWriter, r *http.Request, status int, answer func(line string) (string, bool)) {
	down, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer down.Close()
	upstream, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/v1/rpc", nil)
	if err != nil {
		t.Error(err)
		return
	}
	defer upstream.Close()
	var wmu sync.Mutex
	go func() {
		for {
			_, msg, err := upstream.ReadMessage()
			if err != nil {
				down.Close()
				return
			}
			wmu.Lock()
			down.WriteMessage(websocket.TextMessage, msg)
			wmu.Unlock()
		}
	}()
	for {
		_, msg, err := down.ReadMessage()
		if err != nil {
			return
		}
		for _, line := range strings.Split(string(msg), "\n") {
			if body, ok := answer(line); ok {
				var id uint64
				fmt.Sscanf(line, `{"id":%d`, &id)
				wmu.Lock()
				down.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `{"id":%d,"status":%d,"body":%s}`, id, status, body))
				wmu.Unlock()
				continue
			}
			if upstream.WriteMessage(websocket.TextMessage, []byte(line)) != nil {
				return
			}
		}
	}
}

// shedClient is a client (over RPC or JSON) of a new real server behind
// shedding, recording the waits it would sleep before each call sent
// again.
func shedClient(t *testing.T, status int, shed func(path, line string) bool, rpc bool) (*client.Client, func() []time.Duration) {
	t.Helper()
	c, err := client.New(client.Config{URL: shedding(t, fenceviewtest.New(t), status, shed), DisableRPC: !rpc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, client.RecordWaits(c)
}

func isAcquire(path, line string) bool {
	return path == "/v1/locks/r/acquire" || strings.Contains(line, `"op":"acquire"`)
}

// An acquire shed twice (429 overloaded) is sent again after the server's
// Retry-After, then once more after its retryAfterMs, each with its
// jitter, and is granted once: over JSON and over RPC alike.
func TestOverloadedIsRetried(t *testing.T) {
	for _, rpc := range []bool{false, true} {
		c, waits := shedClient(t, http.StatusTooManyRequests, isAcquire, rpc)
		ctx := context.Background()
		tok, err := c.Mutex("r", "a").TryLock(ctx, 0, time.Minute)
		if err != nil {
			t.Fatalf("rpc %v: TryLock = %v", rpc, err)
		}
		// The waits are the server's plus the most jitter (half of it).
		if w := waits(); len(w) != 2 || w[0] != 3*time.Second || w[1] != 1050*time.Millisecond {
			t.Fatalf("rpc %v: waits %v, want [3s 1.05s]", rpc, w)
		}
		if st, err := c.State(ctx, "r"); err != nil || !st.Locked || st.HoldCount != 1 || st.Token != tok {
			t.Fatalf("rpc %v: state %+v, %v: want one grant of token %d", rpc, st, err, tok)
		}
	}
}

// A 503 with Retry-After (no leader) is sent again only for a call that
// can be sent twice: a renewal is, an acquire is not (the server may have
// granted it).
func TestUnavailableRetriesOnlyIdempotent(t *testing.T) {
	for _, rpc := range []bool{false, true} {
		c, waits := shedClient(t, http.StatusServiceUnavailable, isAcquire, rpc)
		ctx := context.Background()
		_, err := c.Mutex("r", "a").TryLock(ctx, 0, time.Minute)
		var ae *client.APIError
		if !errors.Is(err, client.ErrUnavailable) || !errors.As(err, &ae) || ae.RetryAfter != time.Second || len(waits()) != 0 {
			t.Fatalf("rpc %v: acquire = %v after waits %v: want unavailable at once", rpc, err, waits())
		}

		isRenew := func(path, line string) bool {
			return path == "/v1/locks/r/renew" || strings.Contains(line, `"op":"renew"`)
		}
		c2, waits2 := shedClient(t, http.StatusServiceUnavailable, isRenew, rpc)
		if _, err := c2.Mutex("r", "a").TryLock(ctx, 0, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := client.Renew(ctx, c2, "r", "a"); err != nil || len(waits2()) != 2 {
			t.Fatalf("rpc %v: renew = %v after waits %v: want success after two", rpc, err, waits2())
		}
	}
}
