package main

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
)

// exact reads an integer field of a JSON answer without going through
// float64, which cannot hold 2^63-1.
func exact(t *testing.T, raw []byte, key string) int64 {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var all map[string]any
	if err := dec.Decode(&all); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	num, _ := all[key].(json.Number)
	n, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil {
		t.Fatalf("%s in %s: %v", key, raw, err)
	}
	return n
}

const maxToken = "9223372036854775807"

// Issue 11's first attack, over HTTP and unauthenticated: a report of
// token 2^63-1 as accepted used to raise a resource's mark and counter to
// the maximum; the honest holder was refused, every acquire answered
// "tokens exhausted", and the admin reset answered nextToken
// -9223372036854775808.
func TestPoisonedReportCannotExhaustAResource(t *testing.T) {
	s := startServer(t, func(m *Main) { m.AdminToken = "admin" })
	events := s.stream("?resource=shard-1")
	honest := tokenOf(s.acquire("shard-1", "honest", 60000))
	if r := s.fence("shard-1", honest); r.Status != 200 {
		t.Fatalf("honest write: %d %s", r.Status, r.Raw)
	}
	r := s.do("POST", "/v1/decisions", `{"decisions":[{"resourceId":"shard-1","token":`+maxToken+`,"accepted":true,"source":"attacker"}]}`)
	if r.Status != 200 {
		t.Fatalf("report: %d %s", r.Status, r.Raw)
	}
	if r := s.fence("shard-1", honest); r.Status != 200 {
		t.Fatalf("honest holder refused after the report: %d %s", r.Status, r.Raw)
	}
	for e := events.next(); e.Type != "alarm"; e = events.next() {
	}
	res := s.do("GET", "/v1/resources/shard-1", nil)
	if exact(t, res.Raw, "highWaterMark") != honest || exact(t, res.Raw, "lastToken") != honest ||
		exact(t, res.Raw, "counterAlarm") != math.MaxInt64 {
		t.Fatalf("resource after the report: %s", res.Raw)
	}
	s.do("POST", "/v1/locks/shard-1/release", map[string]any{"holder": "honest"})
	next := tokenOf(s.acquire("shard-1", "next", 60000))
	if next != honest+1 {
		t.Fatalf("next grant = %d, want %d", next, honest+1)
	}
	if r := s.fence("shard-1", next); r.Status != 200 {
		t.Fatalf("the server's fence refused its own next grant: %d %s", r.Status, r.Raw)
	}
	r = s.do("POST", "/v1/locks/shard-1/reset", map[string]any{"floor": 100}, "Authorization", "Bearer admin")
	if r.Status != 200 || exact(t, r.Raw, "nextToken") != 101 {
		t.Fatalf("reset: %d %s", r.Status, r.Raw)
	}
}

// A resource this server never issued for cannot be claimed in advance
// with 2^63-1 through /v1/fence: above 2^62 the fence is refused (400) and
// nothing is recorded. A resource whose tokens did run out (the last
// token issued, then fenced) refuses acquire with a clear error, nothing
// in any answer overflows, and the admin's recovery call brings it back,
// recorded as an event.
func TestClaimedResourceIsRecoveredByTheAdmin(t *testing.T) {
	s := startServer(t, func(m *Main) { m.AdminToken = "admin" })
	events := s.stream("?resource=orders-9")
	r := s.do("POST", "/v1/fence/orders-9", nil, "X-Fencing-Token", maxToken)
	if r.Status != 400 {
		t.Fatalf("claim with 2^63-1: %d %s", r.Status, r.Raw)
	}
	if r := s.do("GET", "/v1/resources/orders-9", nil); r.Status != 404 {
		t.Fatalf("the refused claim recorded a resource: %d %s", r.Status, r.Raw)
	}
	const lastFloor = "9223372036854775805" // the next grant takes the last token, 2^63-2
	if r := s.do("POST", "/v1/locks/orders-9/reset", `{"floor":`+lastFloor+`}`, "Authorization", "Bearer admin"); r.Status != 200 {
		t.Fatalf("reset to the end: %d %s", r.Status, r.Raw)
	}
	if r := s.acquire("orders-9", "a", 60000); r.Status != 200 || !strings.Contains(string(r.Raw), `"token":9223372036854775806`) {
		t.Fatalf("the last grant: %d %s", r.Status, r.Raw)
	}
	s.do("POST", "/v1/locks/orders-9/release", map[string]any{"holder": "a"})
	if r := s.do("POST", "/v1/fence/orders-9", nil, "X-Fencing-Token", "9223372036854775806"); r.Status != 200 {
		t.Fatalf("fence of the last token: %d %s", r.Status, r.Raw)
	}
	r = s.do("POST", "/v1/locks/orders-9/acquire", map[string]any{"holder": "a"})
	if r.Status != 409 || exact(t, r.Raw, "highWaterMark") != math.MaxInt64-1 {
		t.Fatalf("acquire of an exhausted resource: %d %s", r.Status, r.Raw)
	}
	r = s.do("POST", "/v1/locks/orders-9/reset", map[string]any{"floor": 5}, "Authorization", "Bearer admin")
	if r.Status != 200 || exact(t, r.Raw, "nextToken") < 0 {
		t.Fatalf("reset overflowed: %d %s", r.Status, r.Raw)
	}
	for _, bad := range []string{`{}`, `{"token":-1}`, `{"token":"3"}`, `{"token":` + maxToken + `}`, `{"token":9223372036854775806}`} {
		if r := s.do("POST", "/v1/locks/orders-9/recover", bad, "Authorization", "Bearer admin"); r.Status != 400 {
			t.Fatalf("recover with %s: %d %s", bad, r.Status, r.Raw)
		}
	}
	if r := s.do("POST", "/v1/locks/orders-9/recover", `{"token":0}`, "Authorization", ""); r.Status != 401 {
		t.Fatalf("recover without the admin token: %d %s", r.Status, r.Raw)
	}
	if r := s.do("POST", "/v1/locks/nowhere/recover", `{"token":0}`, "Authorization", "Bearer admin"); r.Status != 404 {
		t.Fatalf("recover of an unknown resource: %d %s", r.Status, r.Raw)
	}
	r = s.do("POST", "/v1/locks/orders-9/recover", `{"token":5}`, "Authorization", "Bearer admin")
	if r.Status != 200 || exact(t, r.Raw, "lastToken") != 5 || exact(t, r.Raw, "highWaterMark") != 5 || exact(t, r.Raw, "nextToken") != 6 {
		t.Fatalf("recover: %d %s", r.Status, r.Raw)
	}
	if tok := tokenOf(s.acquire("orders-9", "a", 60000)); tok != 6 {
		t.Fatalf("grant after recovery = %d, want 6", tok)
	}
	e := events.next()
	for e.Type != "recover" {
		e = events.next()
	}
	if e.Token != 5 || e.Presented == nil || *e.Presented != math.MaxInt64-1 || e.Required == nil || *e.Required != math.MaxInt64-1 || e.Source != "admin" {
		t.Fatalf("recover event: %+v", e)
	}
	if r := s.do("GET", "/v1/resources/orders-9", nil); exact(t, r.Raw, "counterAlarm") != 0 {
		t.Fatalf("alarm after recovery: %s", r.Raw)
	}
}

// The tests' own readers of answers are exact above 2^53, where a float64
// would round 9007199254740993 to ...992 and a check could pass wrongly.
func TestAnswerReadersAreExactAbove2To53(t *testing.T) {
	r := response{Raw: []byte(`{"fencing":{"token":9007199254740993},"highWaterMark":9223372036854775807}`)}
	if got := tokenOf(r); got != 9007199254740993 {
		t.Errorf("tokenOf = %d", got)
	}
	if got := r.num("highWaterMark"); got != math.MaxInt64 {
		t.Errorf("num = %d", got)
	}
}
