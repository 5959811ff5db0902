package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	neturl "net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// attack is the hostile half of the soak benchmark (bench/soak.sh): n
// connections that try to exhaust the server while honest clients run.
// They are split evenly, each reconnecting when the server closes it:
//
//   - slow RPC readers: a client key's /v1/rpc, sending messages of 1,000
//     requests and never reading an answer;
//   - slow event readers: a viewer key's /v1/events?since=0, never read;
//   - floods: keep-alive requests with made-up bearer secrets;
//   - made-up methods: requests with a new method each, up to 64 KiB long;
//   - login storms: POST /login with a viewer key and with wrong ones.
type attack struct {
	url, ws   string
	key       string // client role: the slow RPC readers'
	viewerKey string // the logins'
	dialer    *net.Dialer
	counts    [5]atomic.Int64
}

var attackKinds = [5]string{"slow-rpc", "slow-events", "flood", "methods", "logins"}

// runAttack runs n hostile connections against base for d. from, when
// set, is the local address they come from: an attacker is not at the
// honest clients' address, and the server's limits per client address
// would otherwise throttle both alike.
func runAttack(ctx context.Context, base, key, viewerKey, from string, n int, d time.Duration, out io.Writer) error {
	u, err := neturl.Parse(base)
	if err != nil || u.Host == "" {
		return fmt.Errorf("-url %q: not a server URL", base)
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	if from != "" {
		ip := net.ParseIP(from)
		if ip == nil {
			return fmt.Errorf("-attack-from %q: not an IP address", from)
		}
		dialer.LocalAddr = &net.TCPAddr{IP: ip}
	}
	a := &attack{url: strings.TrimSuffix(base, "/"), ws: "ws" + strings.TrimPrefix(strings.TrimSuffix(base, "/"), "http"), key: key, viewerKey: viewerKey, dialer: dialer}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	for i := range n {
		kind := i % len(attackKinds)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			for ctx.Err() == nil {
				a.once(ctx, kind, u.Host, rng)
			}
		}()
	}
	wg.Wait()
	fmt.Fprintf(out, "attack: %d connections for %s\n", n, d)
	for k, name := range attackKinds {
		fmt.Fprintf(out, "  %-12s %d\n", name, a.counts[k].Load())
	}
	return nil
}

// once runs one hostile connection of kind until the server ends it or
// ctx does; counts say how many requests (or connections) it made.
func (a *attack) once(ctx context.Context, kind int, host string, rng *rand.Rand) {
	count := &a.counts[kind]
	switch kind {
	case 0, 1:
		// The RPC readers with the client key; the event readers with the
		// viewer key, which may not take the websockets clients need.
		path, secret := "/v1/rpc", a.key
		if kind == 1 {
			path, secret = "/v1/events?since=0", a.viewerKey
		}
		h := http.Header{}
		if secret != "" {
			h.Set("Authorization", "Bearer "+secret)
		}
		wd := *websocket.DefaultDialer
		wd.NetDialContext = a.dialer.DialContext
		c, _, err := wd.DialContext(ctx, a.ws+path, h)
		if err != nil {
			pause(ctx)
			return
		}
		defer closeWhenDone(ctx, c)()
		count.Add(1)
		if kind == 1 {
			c.SetReadDeadline(time.Time{})
			<-ctx.Done() // never reads
			return
		}
		var msg strings.Builder
		for i := range 1000 {
			fmt.Fprintf(&msg, `{"id":%d,"op":"lock","resource":"attack-%d"}`+"\n", i+1, i%64)
		}
		for ctx.Err() == nil {
			if c.WriteMessage(websocket.TextMessage, []byte(msg.String())) != nil {
				return // closed for not reading: connect again
			}
		}
	case 2:
		hc := &http.Client{Timeout: 10 * time.Second, Transport: a.transport()}
		hammer(ctx, hc, count, func() *http.Request {
			req, _ := http.NewRequestWithContext(ctx, "POST", a.url+"/v1/locks/attack/acquire", strings.NewReader(`{"holder":"x"}`))
			req.Header.Set("Authorization", fmt.Sprintf("Bearer fv_%016x_%043d", rng.Uint64(), rng.Uint64()))
			return req
		})
	case 3:
		c, err := a.dialer.DialContext(ctx, "tcp", host)
		if err != nil {
			pause(ctx)
			return
		}
		defer closeWhenDone(ctx, c)()
		br := bufio.NewReader(c)
		for ctx.Err() == nil {
			method := fmt.Sprintf("M%x", rng.Uint64())
			if rng.IntN(20) == 0 {
				method += strings.Repeat("X", rng.IntN(64<<10))
			}
			if _, err := fmt.Fprintf(c, "%s /v1/locks/attack/acquire HTTP/1.1\r\nHost: %s\r\n\r\n", method, host); err != nil {
				return
			}
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			count.Add(1)
		}
	case 4:
		hc := &http.Client{Timeout: 10 * time.Second, Transport: a.transport(), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		hammer(ctx, hc, count, func() *http.Request {
			secret := a.viewerKey
			if secret == "" || rng.IntN(2) == 0 {
				secret = fmt.Sprintf("fv_%016x_%043d", rng.Uint64(), rng.Uint64())
			}
			req, _ := http.NewRequestWithContext(ctx, "POST", a.url+"/login", strings.NewReader(neturl.Values{"key": {secret}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", a.url)
			return req
		})
	}
}

// hammer sends the requests next makes until ctx is done, counting the
// answers; a request that fails pauses and returns, to connect again.
func hammer(ctx context.Context, hc *http.Client, count *atomic.Int64, next func() *http.Request) {
	for ctx.Err() == nil {
		res, err := hc.Do(next())
		if err != nil {
			pause(ctx)
			return
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		count.Add(1)
	}
}

// closeWhenDone closes c once ctx is done, ending a blocked read or
// write; the func it returns stops that and closes c.
func closeWhenDone(ctx context.Context, c io.Closer) func() {
	stop := context.AfterFunc(ctx, func() { c.Close() })
	return func() {
		stop()
		c.Close()
	}
}

// pause waits a little before connecting again, so a refused connection
// does not spin.
func pause(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(50 * time.Millisecond):
	}
}

// transport is an HTTP transport whose connections come from a.dialer.
func (a *attack) transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = a.dialer.DialContext
	return t
}
