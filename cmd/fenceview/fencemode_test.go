package main

import (
	"strings"
	"testing"
	"time"
)

// The fence's mode current, per request (header or body) and over the RPC
// stream: a token below the last one issued is refused as superseded with
// required the last token issued, and the mark does not move; bad modes
// are 400 and record nothing.
func TestFenceModeCurrentPerRequest(t *testing.T) {
	s := startServer(t)
	s.acquire("r", "a", 1000)
	s.clock.Advance(2 * time.Second)
	t2 := tokenOf(s.acquire("r", "b", 60000))
	wantSuperseded := func(how string, r response) {
		t.Helper()
		if r.Status != 409 || r.Body["reason"] != "superseded" || r.num("required") != t2 || r.num("presented") != 1 || r.Body["accepted"] != false {
			t.Fatalf("%s: token 1 after %d was issued: %d %s", how, t2, r.Status, r.Raw)
		}
	}
	wantSuperseded("header", s.do("POST", "/v1/fence/r", nil, "X-Fencing-Token", "1", "X-Fencing-Mode", "current"))
	wantSuperseded("body", s.do("POST", "/v1/fence/r", map[string]any{"token": 1, "mode": "current"}))
	wantSuperseded("both", s.do("POST", "/v1/fence/r", map[string]any{"token": 1, "mode": "current"}, "X-Fencing-Mode", "current"))
	if r := s.do("GET", "/v1/resources/r", nil); r.num("highWaterMark") != 0 || r.num("rejected") != 3 {
		t.Fatalf("superseded refusals moved the mark: %s", r.Raw)
	}
	conn := s.rpc()
	a := conn.send(`{"id":1,"op":"fence","resource":"r","token":1,"mode":"current"}`, `{"id":2,"op":"fence","resource":"r","token":1,"mode":"strict"}`)
	if a[1].Status != 409 || !jsonHas(a[1].Body, `"reason":"superseded"`) {
		t.Fatalf("rpc fence in mode current: %d %s", a[1].Status, a[1].Body)
	}
	if a[2].Status != 400 {
		t.Fatalf("rpc fence with mode strict: %d %s", a[2].Status, a[2].Body)
	}
	for _, bad := range []struct {
		body   any
		header []string
	}{
		{nil, []string{"X-Fencing-Token", "1", "X-Fencing-Mode", "strict"}},
		{nil, []string{"X-Fencing-Token", "1", "X-Fencing-Mode", ""}},
		{map[string]any{"token": 1, "mode": "CURRENT"}, nil},
		{map[string]any{"token": 1, "mode": 1}, nil},
		{map[string]any{"token": 1, "mode": "mark"}, []string{"X-Fencing-Mode", "current"}},
	} {
		if r := s.do("POST", "/v1/fence/r", bad.body, bad.header...); r.Status != 400 {
			t.Fatalf("mode %v %v: %d %s", bad.body, bad.header, r.Status, r.Raw)
		}
	}
	if r := s.do("GET", "/v1/resources/r", nil); r.num("highWaterMark") != 0 || r.num("rejected") != 4 || r.num("accepted") != 0 {
		t.Fatalf("bad modes changed the record: %s", r.Raw)
	}
	// Without a mode, the rule: token 1 is at the mark, accepted.
	if r := s.fence("r", 1); r.Status != 200 {
		t.Fatalf("token 1 in the default mode: %d %s", r.Status, r.Raw)
	}
	if r := s.do("POST", "/v1/fence/r", nil, "X-Fencing-Token", itoa(t2), "X-Fencing-Mode", "current"); r.Status != 200 {
		t.Fatalf("the last token issued in mode current: %d %s", r.Status, r.Raw)
	}
}

// --fence-mode current fences every request in mode current; a request
// asking for mode mark does not weaken it. A bad --fence-mode is refused.
func TestFenceModeCurrentPerServer(t *testing.T) {
	s := startServer(t, func(m *Main) { m.FenceMode = "current" })
	s.acquire("r", "a", 1000)
	s.clock.Advance(2 * time.Second)
	t2 := tokenOf(s.acquire("r", "b", 60000))
	for _, r := range []response{
		s.fence("r", 1),
		s.do("POST", "/v1/fence/r", map[string]any{"token": 1, "mode": "mark"}),
		s.do("POST", "/v1/fence/r", nil, "X-Fencing-Token", "1", "X-Fencing-Mode", "mark"),
	} {
		if r.Status != 409 || r.Body["reason"] != "superseded" || r.num("required") != t2 {
			t.Fatalf("token 1 on a server in mode current: %d %s", r.Status, r.Raw)
		}
	}
	if r := s.fence("r", t2); r.Status != 200 {
		t.Fatalf("the last token issued: %d %s", r.Status, r.Raw)
	}
	m := NewMain()
	if err := m.ParseFlags([]string{"--fence-mode", "current"}); err != nil || m.FenceMode != "current" {
		t.Fatalf("--fence-mode current: %q %v", m.FenceMode, err)
	}
	if err := NewMain().ParseFlags([]string{"--fence-mode", "strict"}); err == nil {
		t.Fatal("--fence-mode strict accepted")
	}
}

func jsonHas(raw []byte, s string) bool { return strings.Contains(string(raw), s) }

// Over the JSON API and the RPC stream, a re-entrant acquire without
// leaseMs keeps the current lease's length; a first one gets 30 s.
func TestReentrantAcquireWithoutLeaseKeepsIt(t *testing.T) {
	s := startServer(t)
	s.acquire("r", "a", 60000)
	r := s.do("POST", "/v1/locks/r/acquire", map[string]any{"holder": "a"})
	if r.Status != 200 || r.num("leaseMs") != 60000 || r.num("holdCount") != 2 {
		t.Fatalf("re-entrant acquire without leaseMs: %d %s", r.Status, r.Raw)
	}
	if l := s.do("GET", "/v1/locks/r", nil); l.num("leaseMs") != 60000 || l.num("remainingMs") != 60000 {
		t.Fatalf("lock after it: %s", l.Raw)
	}
	a := s.rpc().send(`{"id":1,"op":"acquire","resource":"r","holder":"a"}`, `{"id":2,"op":"acquire","resource":"new","holder":"a"}`)
	if !jsonHas(a[1].Body, `"leaseMs":60000`) || !jsonHas(a[2].Body, `"leaseMs":30000`) {
		t.Fatalf("over the RPC stream: %s and %s", a[1].Body, a[2].Body)
	}
}
