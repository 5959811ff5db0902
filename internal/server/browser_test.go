package server_test

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/fenceview/fenceview/internal/server"
	"github.com/fenceview/fenceview/internal/servertest"
)

// A web page in a browser on the same machine could change state with a
// no-cors fetch or a form (no preflight), or, after DNS rebinding, read
// everything under its own host name. Refused, auth on or off.
func TestBrowserSafety(t *testing.T) {
	for _, authOn := range []bool{false, true} {
		cfg := server.Config{}
		cred := ""
		if authOn {
			cfg.AdminToken, cred = admin, admin
		}
		s := servertest.Start(t, cfg)
		u, _ := url.Parse(s.URL())
		before := seq(s)
		for _, h := range [][]string{
			{"Origin", "http://evil.example"},
			{"Origin", "null"},
			{"Origin", "http://" + u.Host + ".evil.example"},
			{"Sec-Fetch-Site", "cross-site"},
			{"Origin", "http://" + u.Host, "Sec-Fetch-Site", "cross-site"},
		} {
			for _, p := range []string{"/v1/locks/r/acquire", "/v1/fence/r", "/v1/decisions", "/v1/locks/r/expire"} {
				a := call(t, nil, "POST", s.URL()+p, cred, `{"holder":"h","token":5,"decisions":[{"resourceId":"r","token":7,"accepted":true}]}`,
					append([]string{"Content-Type", "text/plain"}, h...)...)
				a.wantError(t, 403)
			}
			if _, res, err := dial(t, wsURL(s, "/v1/events"), cred, h...); err == nil || res.StatusCode != 403 {
				t.Fatalf("auth %v: events websocket with %v: %v", authOn, h, err)
			}
			if _, res, err := dial(t, wsURL(s, "/v1/rpc"), cred, h...); err == nil || res.StatusCode != 403 {
				t.Fatalf("auth %v: rpc websocket with %v: %v", authOn, h, err)
			}
		}
		if seq(s) != before {
			t.Fatalf("auth %v: cross-site requests recorded events", authOn)
		}
		// Same origin, and programs that send no Origin, are unaffected.
		for _, h := range [][]string{nil, {"Origin", "http://" + u.Host, "Sec-Fetch-Site", "same-origin"}} {
			if a := call(t, nil, "POST", s.URL()+"/v1/locks/r/acquire", cred, acquireBody("h"), h...); a.Status != 200 {
				t.Fatalf("auth %v: %v: %d %s", authOn, h, a.Status, a.Raw)
			}
			ws, _, err := dial(t, wsURL(s, "/v1/events"), cred, h...)
			if err != nil {
				t.Fatalf("auth %v: same-origin stream %v: %v", authOn, h, err)
			}
			ws.Close()
		}
		// A cross-site GET changes nothing and is allowed (the page cannot read it).
		if a := call(t, nil, "GET", s.URL()+"/healthz", "", nil, "Sec-Fetch-Site", "cross-site"); a.Status != 200 {
			t.Fatalf("cross-site GET: %d", a.Status)
		}
	}
}

// DNS rebinding: with auth off, a request for another host name is refused,
// reads included; loopback names and --allowed-host pass.
func TestHostCheckWithAuthOff(t *testing.T) {
	s := servertest.Start(t, server.Config{Access: server.Access{AllowedHosts: []string{"fenceview.internal", "other.example:9999"}}})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(s.URL(), "http://"))
	for _, host := range []string{"evil.example:" + port, "evil.example", "127.0.0.1.evil.example:" + port, "localhost.evil.example", "other.example:" + port, "[::2]:" + port} {
		for _, p := range []string{"/v1/resources", "/v1/locks/r", "/"} {
			call(t, nil, "GET", s.URL()+p, "", nil, "Host", host).wantError(t, 403)
		}
		if _, res, err := dial(t, wsURL(s, "/v1/events"), "", "Host", host); err == nil || res.StatusCode != 403 {
			t.Fatalf("stream for host %q: %v", host, err)
		}
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST:" + port, "[::1]:" + port, "localhost:1", "127.0.0.1", "fenceview.internal", "fenceview.internal:" + port, "other.example:9999"} {
		if a := call(t, nil, "GET", s.URL()+"/v1/resources", "", nil, "Host", host); a.Status != 200 {
			t.Fatalf("host %q: %d %s", host, a.Status, a.Raw)
		}
	}
	// With auth on, the credential is the defence and any name is served
	// (reverse proxies, DNS names).
	s2 := servertest.Start(t, server.Config{AdminToken: admin})
	if a := call(t, nil, "GET", s2.URL()+"/v1/resources", admin, nil, "Host", "fenceview.example.com"); a.Status != 200 {
		t.Fatalf("auth on, other host: %d", a.Status)
	}
}

// Beyond loopback without an admin token the server does not start, unless
// told to be insecure.
func TestRefusesOpenAddressWithoutToken(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", ":0", "192.0.2.1:0"} {
		if err := server.CheckAddr(addr, "", false); err == nil || !strings.Contains(err.Error(), "--admin-token") {
			t.Fatalf("%s: %v", addr, err)
		}
		if err := server.CheckAddr(addr, "t", false); err != nil {
			t.Fatalf("%s with a token: %v", addr, err)
		}
		if err := server.CheckAddr(addr, "", true); err != nil {
			t.Fatalf("%s insecure: %v", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0", "localhost:0", "127.0.0.2:8080"} {
		if err := server.CheckAddr(addr, "", false); err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
	}
	if _, err := servertest.TryStart(t, server.Config{Addr: "0.0.0.0:0"}); err == nil {
		t.Fatal("Start served 0.0.0.0 without a token")
	}
	s := servertest.Start(t, server.Config{Addr: "0.0.0.0:0", Access: server.Access{InsecureNoAuth: true}})
	if a := call(t, nil, "GET", s.URL()+"/healthz", "", nil); a.Status != http.StatusOK {
		t.Fatalf("insecure start: %d", a.Status)
	}
}
