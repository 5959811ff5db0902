package main

import (
	"strings"
	"testing"
)

// Every route answers bad input with a 4xx and a JSON error, and changes
// nothing: the resources and the last event number are the same after.
func TestBadInputChangesNothing(t *testing.T) {
	s := startWithHeldLock(t)

	long := strings.Repeat("r", 161)
	longHolder := strings.Repeat("h", 81)
	big := `{"holder":"` + strings.Repeat("x", 70<<10) + `"}`
	cases := []struct {
		name, method, path string
		body               any
		header             []string
		status             int
	}{
		{"acquire: no body", "POST", "/v1/locks/r/acquire", nil, nil, 400},
		{"acquire: not JSON", "POST", "/v1/locks/r/acquire", "holder=a", nil, 400},
		{"acquire: array", "POST", "/v1/locks/r/acquire", "[]", nil, 400},
		{"acquire: trailing data", "POST", "/v1/locks/r/acquire", `{"holder":"a"}{}`, nil, 400},
		{"acquire: no holder", "POST", "/v1/locks/r/acquire", `{"leaseMs":1000}`, nil, 400},
		{"acquire: holder not a string", "POST", "/v1/locks/r/acquire", `{"holder":42}`, nil, 400},
		{"acquire: empty holder", "POST", "/v1/locks/r/acquire", `{"holder":""}`, nil, 400},
		{"acquire: holder too long", "POST", "/v1/locks/r/acquire", `{"holder":"` + longHolder + `"}`, nil, 400},
		{"acquire: holder control char", "POST", "/v1/locks/r/acquire", `{"holder":"a\u0007"}`, nil, 400},
		{"acquire: lease a string", "POST", "/v1/locks/r/acquire", `{"holder":"a","leaseMs":"1000"}`, nil, 400},
		{"acquire: lease fraction", "POST", "/v1/locks/r/acquire", `{"holder":"a","leaseMs":1.5}`, nil, 400},
		{"acquire: lease zero", "POST", "/v1/locks/r/acquire", `{"holder":"a","leaseMs":0}`, nil, 400},
		{"acquire: lease negative", "POST", "/v1/locks/r/acquire", `{"holder":"a","leaseMs":-1}`, nil, 400},
		{"acquire: lease too long", "POST", "/v1/locks/r/acquire", `{"holder":"a","leaseMs":86400001}`, nil, 400},
		// 18446744133709 ms is 2^64 ns + 60 s: multiplied without a bound it
		// would wrap to a valid minute.
		{"acquire: lease that would wrap", "POST", "/v1/locks/r/acquire", `{"holder":"a","leaseMs":18446744133709}`, nil, 400},
		{"acquire: lock-delay that would wrap", "POST", "/v1/locks/r/acquire", `{"holder":"a","lockDelayMs":18446744133709}`, nil, 400},
		{"renew: lease that would wrap", "POST", "/v1/locks/held/renew", `{"holder":"owner","leaseMs":18446744133709}`, nil, 400},
		{"acquire: wait negative", "POST", "/v1/locks/r/acquire", `{"holder":"a","waitMs":-1}`, nil, 400},
		{"acquire: wait too long", "POST", "/v1/locks/r/acquire", `{"holder":"a","waitMs":300001}`, nil, 400},
		{"acquire: wait exponent", "POST", "/v1/locks/r/acquire", `{"holder":"a","waitMs":1e3}`, nil, 400},
		{"acquire: resource too long", "POST", "/v1/locks/" + long + "/acquire", `{"holder":"a"}`, nil, 400},
		{"acquire: resource invalid UTF-8", "POST", "/v1/locks/%FF/acquire", `{"holder":"a"}`, nil, 400},
		{"acquire: resource control char", "POST", "/v1/locks/a%0Ab/acquire", `{"holder":"a"}`, nil, 400},
		{"acquire: body too large", "POST", "/v1/locks/r/acquire", big, nil, 413},
		{"acquire: held by another", "POST", "/v1/locks/held/acquire", `{"holder":"thief"}`, nil, 409},
		{"renew: not owner", "POST", "/v1/locks/held/renew", `{"holder":"thief"}`, nil, 409},
		{"renew: negative lease", "POST", "/v1/locks/held/renew", `{"holder":"owner","leaseMs":-5}`, nil, 400},
		{"renew: no body", "POST", "/v1/locks/held/renew", nil, nil, 400},
		{"release: not owner", "POST", "/v1/locks/held/release", `{"holder":"thief"}`, nil, 409},
		{"release: holder null", "POST", "/v1/locks/held/release", `{"holder":null}`, nil, 400},
		{"expire: no admin token", "POST", "/v1/locks/held/expire", nil, []string{"Authorization", ""}, 401},
		{"expire: bad resource", "POST", "/v1/locks/%FF/expire", nil, []string{"Authorization", "Bearer admin"}, 400},
		{"lock: bad resource", "GET", "/v1/locks/" + long, nil, nil, 400},
		{"fence: no token", "POST", "/v1/fence/held", nil, nil, 400},
		{"fence: header zero", "POST", "/v1/fence/held", nil, []string{"X-Fencing-Token", "0"}, 400},
		{"fence: header negative", "POST", "/v1/fence/held", nil, []string{"X-Fencing-Token", "-3"}, 400},
		{"fence: header plus sign", "POST", "/v1/fence/held", nil, []string{"X-Fencing-Token", "+3"}, 400},
		{"fence: header fraction", "POST", "/v1/fence/held", nil, []string{"X-Fencing-Token", "3.0"}, 400},
		{"fence: header overflow", "POST", "/v1/fence/held", nil, []string{"X-Fencing-Token", "9223372036854775808"}, 400},
		{"fence: header words", "POST", "/v1/fence/held", nil, []string{"X-Fencing-Token", "one"}, 400},
		{"fence: body token string", "POST", "/v1/fence/held", `{"token":"1"}`, nil, 400},
		{"fence: body token fraction", "POST", "/v1/fence/held", `{"token":1.5}`, nil, 400},
		{"fence: body token zero", "POST", "/v1/fence/held", `{"token":0}`, nil, 400},
		{"fence: body token huge", "POST", "/v1/fence/held", `{"token":99999999999999999999}`, nil, 400},
		{"fence: header and body differ", "POST", "/v1/fence/held", `{"token":1}`, []string{"X-Fencing-Token", "2"}, 400},
		{"fence: bad resource", "POST", "/v1/fence/%FF", `{"token":1}`, nil, 400},
		{"fence: bad holder", "POST", "/v1/fence/held", `{"token":1,"holder":"a\u0000"}`, nil, 400},
		{"decisions: no body", "POST", "/v1/decisions", nil, nil, 400},
		{"decisions: missing list", "POST", "/v1/decisions", `{}`, nil, 400},
		{"decisions: list not array", "POST", "/v1/decisions", `{"decisions":{}}`, nil, 400},
		{"decisions: missing token", "POST", "/v1/decisions", `{"decisions":[{"resourceId":"r","accepted":true,"source":"p"}]}`, nil, 400},
		{"decisions: missing accepted", "POST", "/v1/decisions", `{"decisions":[{"resourceId":"r","token":1,"source":"p"}]}`, nil, 400},
		{"decisions: missing source", "POST", "/v1/decisions", `{"decisions":[{"resourceId":"r","token":1,"accepted":true}]}`, nil, 400},
		{"decisions: bad time", "POST", "/v1/decisions", `{"decisions":[{"resourceId":"r","token":1,"accepted":true,"source":"p","at":"yesterday"}]}`, nil, 400},
		{"decisions: one bad of two", "POST", "/v1/decisions", `{"decisions":[{"resourceId":"ok","token":1,"accepted":true,"source":"p"},{"resourceId":"","token":1,"accepted":true,"source":"p"}]}`, nil, 400},
		{"decisions: negative required", "POST", "/v1/decisions", `{"decisions":[{"resourceId":"r","token":1,"accepted":false,"required":-1,"source":"p"}]}`, nil, 400},
		{"resource: unknown", "GET", "/v1/resources/nope", nil, nil, 404},
		{"resource: bad id", "GET", "/v1/resources/%FF", nil, nil, 400},
		{"rejections: limit zero", "GET", "/v1/rejections?limit=0", nil, nil, 400},
		{"rejections: limit huge", "GET", "/v1/rejections?limit=1001", nil, nil, 400},
		{"rejections: limit words", "GET", "/v1/rejections?limit=ten", nil, nil, 400},
		{"rejections: bad since", "GET", "/v1/rejections?since=yesterday", nil, nil, 400},
		{"rejections: until before since", "GET", "/v1/rejections?since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z", nil, nil, 400},
		{"rejections: bad cursor", "GET", "/v1/rejections?cursor=abc", nil, nil, 400},
		{"rejections: negative cursor", "GET", "/v1/rejections?cursor=-4", nil, nil, 400},
		{"rejections: bad resource", "GET", "/v1/rejections?resource=" + long, nil, nil, 400},
		{"events: not a websocket", "GET", "/v1/events", nil, nil, 400},
		{"events: bad since", "GET", "/v1/events?since=-1", nil, nil, 400},
		{"events: bad resource", "GET", "/v1/events?resource=%FF", nil, nil, 400},
		{"unknown route", "GET", "/v2/locks", nil, nil, 404},
		{"wrong method", "DELETE", "/v1/locks/r", nil, nil, 405},
		{"wrong method on acquire", "GET", "/v1/locks/r/acquire", nil, nil, 405},
		{"wrong method on fence", "PUT", "/v1/fence/r", nil, nil, 405},
	}

	changesNothing(t, s, func() {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) { wantRefusal(t, s.do(c.method, c.path, c.body, c.header...), c.status) })
		}
	})
}

// startWithHeldLock starts a server with the admin token "admin" and
// something for bad input to spoil: a lock "held", fenced once.
func startWithHeldLock(t *testing.T) *testServer {
	t.Helper()
	s := startServer(t, func(m *Main) { m.AdminToken = "admin" })
	s.acquire("held", "owner", 60000)
	s.fence("held", 1)
	return s
}

// wantRefusal checks the answer to a bad request: status, with a JSON
// error.
func wantRefusal(t *testing.T, r response, status int) {
	t.Helper()
	if r.Status != status {
		t.Errorf("status %d, want %d: %s", r.Status, status, r.Raw)
	}
	if msg, _ := r.Body["error"].(string); msg == "" {
		t.Errorf("no JSON error in %q", r.Raw)
	}
}

// changesNothing runs send, the bad requests of a test, and fails the
// test if they changed anything a snapshot sees.
func changesNothing(t *testing.T, s *testServer, send func()) {
	t.Helper()
	before := snapshot(s)
	send()
	if after := snapshot(s); after != before {
		t.Fatalf("state changed:\nbefore %s\nafter  %s", before, after)
	}
}

// snapshot is everything a bad request could change, the event sequence
// number included: not one event may be recorded.
func snapshot(s *testServer) string {
	lock := s.do("GET", "/v1/locks/held", nil)
	var b strings.Builder
	b.Write(lock.Raw)
	for _, res := range s.Service.Resources() {
		b.WriteString(res.ResourceID + " ")
		b.WriteString(itoa(res.HighWaterMark) + " " + itoa(res.LastToken) + " " + itoa(res.Accepted) + ";")
	}
	m := s.Service.Metrics()
	b.WriteString(" grants " + itoa(m.Grants) + " accepted " + itoa(m.Accepted) + " seq " + itoa(m.LastSeq))
	return b.String()
}
