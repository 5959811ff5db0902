package main

import (
	"encoding/json"
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The routes of semaphores, multi-locks, elections, lock-delay)
// over a real server. Every answer is checked against internal/api/openapi.yaml by
// doRequest, every RPC answer by rpcConn.send.

// key makes an API key with the admin token and returns its secret.
func (s *testServer) key(role string, prefixes ...string) string {
	s.t.Helper()
	body := map[string]any{"name": role + " " + strings.Join(prefixes, ","), "role": role}
	if len(prefixes) > 0 {
		body["resources"] = prefixes
	}
	r := s.do("POST", "/v1/auth/keys", body)
	if r.Status != 201 {
		s.t.Fatalf("create key: %d %s", r.Status, r.Raw)
	}
	return r.Body["secret"].(string)
}

// rpcAs opens an RPC connection with a key's secret.
func (s *testServer) rpcAs(secret string) *rpcConn {
	s.t.Helper()
	conn, res, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(s.URL(), "http")+"/v1/rpc",
		http.Header{"Authorization": {"Bearer " + secret}})
	if err != nil {
		status := 0
		if res != nil {
			status = res.StatusCode
		}
		s.t.Fatalf("rpc: %v (%d)", err, status)
	}
	s.t.Cleanup(func() { conn.Close() })
	return &rpcConn{t: s.t, conn: conn}
}

func bearer(secret string) []string { return []string{"Authorization", "Bearer " + secret} }

// Bad input to every new route is a 4xx with a JSON error, and changes
// nothing: not one event, not one resource.
func TestPrimitivesBadInputChangesNothing(t *testing.T) {
	s := startWithHeldLock(t)

	name151 := strings.Repeat("n", 151)
	value4097 := strings.Repeat("v", 4097)
	many := make([]string, 65)
	for i := range many {
		many[i] = "r" + itoa(int64(i))
	}
	big := `{"holder":"a","permits":1,"x":"` + strings.Repeat("x", 70<<10) + `"}`
	cases := []struct {
		name, method, path string
		body               any
		status             int
	}{
		{"acquire: lockDelayMs negative", "POST", "/v1/locks/r/acquire", `{"holder":"a","lockDelayMs":-1}`, 400},
		{"acquire: lockDelayMs over 60000", "POST", "/v1/locks/r/acquire", `{"holder":"a","lockDelayMs":60001}`, 400},
		{"acquire: lockDelayMs a string", "POST", "/v1/locks/r/acquire", `{"holder":"a","lockDelayMs":"5"}`, 400},
		{"acquire: lockDelayMs fraction", "POST", "/v1/locks/r/acquire", `{"holder":"a","lockDelayMs":0.5}`, 400},

		{"semaphore: no body", "POST", "/v1/semaphores/jobs/acquire", nil, 400},
		{"semaphore: not an object", "POST", "/v1/semaphores/jobs/acquire", `[]`, 400},
		{"semaphore: no permits", "POST", "/v1/semaphores/jobs/acquire", `{"holder":"a"}`, 400},
		{"semaphore: permits zero", "POST", "/v1/semaphores/jobs/acquire", `{"holder":"a","permits":0}`, 400},
		{"semaphore: permits over 1024", "POST", "/v1/semaphores/jobs/acquire", `{"holder":"a","permits":1025}`, 400},
		{"semaphore: permits a string", "POST", "/v1/semaphores/jobs/acquire", `{"holder":"a","permits":"3"}`, 400},
		{"semaphore: permits fraction", "POST", "/v1/semaphores/jobs/acquire", `{"holder":"a","permits":1.5}`, 400},
		{"semaphore: permits huge", "POST", "/v1/semaphores/jobs/acquire", `{"holder":"a","permits":99999999999999999999}`, 400},
		{"semaphore: no holder", "POST", "/v1/semaphores/jobs/acquire", `{"permits":3}`, 400},
		{"semaphore: holder a number", "POST", "/v1/semaphores/jobs/acquire", `{"holder":7,"permits":3}`, 400},
		{"semaphore: lease zero", "POST", "/v1/semaphores/jobs/acquire", `{"holder":"a","permits":3,"leaseMs":0}`, 400},
		{"semaphore: wait negative", "POST", "/v1/semaphores/jobs/acquire", `{"holder":"a","permits":3,"waitMs":-1}`, 400},
		{"semaphore: lockDelayMs over", "POST", "/v1/semaphores/jobs/acquire", `{"holder":"a","permits":3,"lockDelayMs":60001}`, 400},
		{"semaphore: name with #", "POST", "/v1/semaphores/jobs%231/acquire", `{"holder":"a","permits":3}`, 400},
		{"semaphore: name too long for its slots", "POST", "/v1/semaphores/" + name151 + "/acquire", `{"holder":"a","permits":3}`, 400},
		{"semaphore: name invalid UTF-8", "POST", "/v1/semaphores/%FF/acquire", `{"holder":"a","permits":3}`, 400},
		{"semaphore: body too large", "POST", "/v1/semaphores/jobs/acquire", big, 413},
		{"semaphore release: no slot", "POST", "/v1/semaphores/jobs/release", `{"holder":"a"}`, 400},
		{"semaphore release: slot negative", "POST", "/v1/semaphores/jobs/release", `{"holder":"a","slot":-1}`, 400},
		{"semaphore release: slot 1024", "POST", "/v1/semaphores/jobs/release", `{"holder":"a","slot":1024}`, 400},
		{"semaphore release: slot a string", "POST", "/v1/semaphores/jobs/release", `{"holder":"a","slot":"0"}`, 400},
		{"semaphore state: name with #", "GET", "/v1/semaphores/a%23b", nil, 400},
		{"permits: none", "PUT", "/v1/semaphores/jobs", `{}`, 400},
		{"permits: zero", "PUT", "/v1/semaphores/jobs", `{"permits":0}`, 400},
		{"permits: over 1024", "PUT", "/v1/semaphores/jobs", `{"permits":1025}`, 400},
		{"permits: bad name", "PUT", "/v1/semaphores/" + name151, `{"permits":2}`, 400},

		{"acquire-all: no resources", "POST", "/v1/locks/acquire-all", `{"holder":"a"}`, 400},
		{"acquire-all: empty list", "POST", "/v1/locks/acquire-all", `{"holder":"a","resources":[]}`, 400},
		{"acquire-all: not a list", "POST", "/v1/locks/acquire-all", `{"holder":"a","resources":"r"}`, 400},
		{"acquire-all: a number in the list", "POST", "/v1/locks/acquire-all", `{"holder":"a","resources":["r",1]}`, 400},
		{"acquire-all: duplicate", "POST", "/v1/locks/acquire-all", `{"holder":"a","resources":["x","y","x"]}`, 400},
		{"acquire-all: 65 resources", "POST", "/v1/locks/acquire-all", map[string]any{"holder": "a", "resources": many}, 400},
		{"acquire-all: a bad id", "POST", "/v1/locks/acquire-all", `{"holder":"a","resources":["x",""]}`, 400},
		{"acquire-all: an id too long", "POST", "/v1/locks/acquire-all", `{"holder":"a","resources":["x","` + strings.Repeat("r", 161) + `"]}`, 400},
		{"acquire-all: held lock listed with a bad one", "POST", "/v1/locks/acquire-all", `{"holder":"owner","resources":["held","a\u0000"]}`, 400},
		{"acquire-all: no holder", "POST", "/v1/locks/acquire-all", `{"resources":["x"]}`, 400},
		{"acquire-all: lockDelayMs over", "POST", "/v1/locks/acquire-all", `{"holder":"a","resources":["x"],"lockDelayMs":60001}`, 400},
		{"release-all: empty list", "POST", "/v1/locks/release-all", `{"holder":"owner","resources":[]}`, 400},
		{"release-all: duplicate", "POST", "/v1/locks/release-all", `{"holder":"owner","resources":["held","held"]}`, 400},
		{"release-all: no holder", "POST", "/v1/locks/release-all", `{"resources":["held"]}`, 400},

		{"campaign: no candidate", "POST", "/v1/elections/e/campaign", `{"value":"x"}`, 400},
		{"campaign: empty candidate", "POST", "/v1/elections/e/campaign", `{"candidate":""}`, 400},
		{"campaign: value over 4 KiB", "POST", "/v1/elections/e/campaign", map[string]any{"candidate": "c", "value": value4097}, 400},
		{"campaign: value a number", "POST", "/v1/elections/e/campaign", `{"candidate":"c","value":5}`, 400},
		{"campaign: wait too long", "POST", "/v1/elections/e/campaign", `{"candidate":"c","waitMs":300001}`, 400},
		{"campaign: bad name", "POST", "/v1/elections/%FF/campaign", `{"candidate":"c"}`, 400},
		{"proclaim: no value", "POST", "/v1/elections/e/proclaim", `{"candidate":"c"}`, 400},
		{"proclaim: value over 4 KiB", "POST", "/v1/elections/e/proclaim", map[string]any{"candidate": "c", "value": value4097}, 400},
		{"resign: no candidate", "POST", "/v1/elections/e/resign", `{}`, 400},
		{"renew: lease negative", "POST", "/v1/elections/e/renew", `{"candidate":"c","leaseMs":-1}`, 400},
		{"election: bad name", "GET", "/v1/elections/" + strings.Repeat("e", 161), nil, 400},

		{"semaphores: wrong method", "DELETE", "/v1/semaphores/jobs", nil, 405},
		{"semaphore acquire: GET", "GET", "/v1/semaphores/jobs/acquire", nil, 405},
		{"acquire-all: PUT", "PUT", "/v1/locks/acquire-all", `{}`, 405},
		{"elections: unknown verb", "POST", "/v1/elections/e/abdicate", `{"candidate":"c"}`, 404},
	}
	changesNothing(t, s, func() {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) { wantRefusal(t, s.do(c.method, c.path, c.body), c.status) })
		}
	})
}

// The multi-lock routes have three segments and a lock's four, so a lock
// may be called acquire-all and keep every route of its own.
func TestMultiLockRoutesLeaveLocksNamedLikeThem(t *testing.T) {
	s := startServer(t)
	g := s.acquire("acquire-all", "h", 60000)
	if g.Body["resourceId"] != "acquire-all" {
		t.Fatalf("lock named acquire-all: %s", g.Raw)
	}
	if r := s.do("GET", "/v1/locks/acquire-all", nil); r.Status != 200 || r.Body["holder"] != "h" {
		t.Fatalf("GET the lock named acquire-all: %d %s", r.Status, r.Raw)
	}
	if r := s.do("POST", "/v1/locks/release-all/release", `{"holder":"h"}`); r.Status != 409 || r.Body["code"] != "not-held" {
		t.Fatalf("release of a free lock named release-all: %d %s", r.Status, r.Raw)
	}
	// The hint for an unescaped slash knows the new routes' verbs too.
	r := s.do("POST", "/v1/semaphores/team/jobs/acquire", `{"holder":"h","permits":2}`)
	if r.Status != 404 || r.Body["hint"] != "POST /v1/semaphores/team%2Fjobs/acquire" {
		t.Fatalf("unescaped semaphore name: %d %s", r.Status, r.Raw)
	}
	r = s.do("DELETE", "/v1/semaphores/jobs", nil)
	if r.Status != 405 || r.Header.Get("Allow") != "GET, PUT" {
		t.Fatalf("DELETE a semaphore: %d Allow %q %s", r.Status, r.Header.Get("Allow"), r.Raw)
	}
}

// A free lock's state says no lock-delay runs: availableAt is null.
func TestLockStateHasAvailableAt(t *testing.T) {
	s := startServer(t)
	s.do("POST", "/v1/locks/r/acquire", `{"holder":"h","lockDelayMs":60000}`)
	for _, res := range []string{"r", "never-seen"} {
		r := s.do("GET", "/v1/locks/"+res, nil)
		v, ok := r.Body["availableAt"]
		if r.Status != 200 || !ok || v != nil {
			t.Fatalf("GET %s: %d %s", res, r.Status, r.Raw)
		}
	}
}

// A key's prefixes apply to every lock a request touches: one outside
// them refuses the whole request (403), and nothing changes. Roles are
// the locks': viewers read, clients lock, admins set permits.
func TestPrimitivesAccess(t *testing.T) {
	s := startServer(t, func(m *Main) { m.AdminToken = "admin" })
	teamA := s.key("client", "team-a/")
	slotZero := s.key("client", "jobs#0") // slot 0 of jobs, not slot 1
	viewer := s.key("viewer")
	client := s.key("client")

	before := snapshot(s)
	for _, c := range []struct {
		name, method, path, secret string
		body                       any
	}{
		{"acquire-all with one outside", "POST", "/v1/locks/acquire-all", teamA, `{"holder":"h","resources":["team-a/x","team-b/y"]}`},
		{"release-all with one outside", "POST", "/v1/locks/release-all", teamA, `{"holder":"h","resources":["team-a/x","team-b/y"]}`},
		{"semaphore outside", "POST", "/v1/semaphores/team-b%2Fjobs/acquire", teamA, `{"holder":"h","permits":2}`},
		{"semaphore with a slot outside", "POST", "/v1/semaphores/jobs/acquire", slotZero, `{"holder":"h","permits":2}`},
		{"semaphore release of a slot outside", "POST", "/v1/semaphores/jobs/release", slotZero, `{"holder":"h","slot":1}`},
		{"semaphore state outside", "GET", "/v1/semaphores/team-b%2Fjobs", teamA, nil},
		{"election outside", "POST", "/v1/elections/team-b%2Fleader/campaign", teamA, `{"candidate":"c"}`},
		{"election state outside", "GET", "/v1/elections/team-b%2Fleader", teamA, nil},
		{"proclaim outside", "POST", "/v1/elections/team-b%2Fleader/proclaim", teamA, `{"candidate":"c","value":"v"}`},
		{"resign outside", "POST", "/v1/elections/team-b%2Fleader/resign", teamA, `{"candidate":"c"}`},
		{"viewer acquire-all", "POST", "/v1/locks/acquire-all", viewer, `{"holder":"h","resources":["x"]}`},
		{"viewer semaphore", "POST", "/v1/semaphores/jobs/acquire", viewer, `{"holder":"h","permits":2}`},
		{"viewer campaign", "POST", "/v1/elections/e/campaign", viewer, `{"candidate":"c"}`},
		{"client sets permits", "PUT", "/v1/semaphores/jobs", client, `{"permits":4}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := s.do(c.method, c.path, c.body, bearer(c.secret)...)
			if r.Status != 403 {
				t.Fatalf("status %d, want 403: %s", r.Status, r.Raw)
			}
		})
	}
	// Without a credential: 401.
	if r := s.do("POST", "/v1/semaphores/jobs/acquire", `{"holder":"h","permits":2}`, "Authorization", ""); r.Status != 401 {
		t.Fatalf("no credential: %d %s", r.Status, r.Raw)
	}

	// The RPC stream checks the same, per request.
	conn := s.rpcAs(teamA)
	answers := conn.send(
		`{"id":1,"op":"acquire-all","resources":["team-a/x","team-b/y"],"holder":"h"}`,
		`{"id":2,"op":"semaphore-acquire","name":"team-b/jobs","holder":"h","permits":2}`,
		`{"id":3,"op":"campaign","name":"team-b/leader","candidate":"c"}`,
		`{"id":4,"op":"semaphore-permits","name":"team-a/jobs","permits":2}`,
		`{"id":5,"op":"election","name":"team-b/leader"}`,
		`{"id":6,"op":"release-all","resources":["team-b/y"],"holder":"h"}`,
	)
	for id, a := range answers {
		if a.Status != 403 {
			t.Errorf("rpc %d: %d %s", id, a.Status, a.Body)
		}
	}
	slot := s.rpcAs(slotZero).send(`{"id":1,"op":"semaphore-acquire","name":"jobs","holder":"h","permits":2,"waitMs":1000}`)
	if slot[1].Status != 403 {
		t.Errorf("rpc semaphore with a slot outside: %d %s", slot[1].Status, slot[1].Body)
	}
	if after := snapshot(s); after != before {
		t.Fatalf("refused requests changed state:\nbefore %s\nafter  %s", before, after)
	}
}

// Bad RPC requests of the new ops are answered 400, change nothing, and
// the connection carries on.
func TestRPCPrimitivesBadRequests(t *testing.T) {
	s := startServer(t)
	before := snapshot(s)
	lines := []string{
		`{"id":1,"op":"semaphore-acquire","name":"jobs","holder":"h"}`,
		`{"id":2,"op":"semaphore-acquire","name":"jobs","holder":"h","permits":1025}`,
		`{"id":3,"op":"semaphore-acquire","name":"a#b","holder":"h","permits":2}`,
		`{"id":4,"op":"semaphore-release","name":"jobs","holder":"h"}`,
		`{"id":5,"op":"acquire-all","resources":[],"holder":"h"}`,
		`{"id":6,"op":"acquire-all","resources":["x","x"],"holder":"h"}`,
		`{"id":7,"op":"acquire-all","resources":"x","holder":"h"}`,
		`{"id":8,"op":"campaign","name":"e"}`,
		`{"id":9,"op":"proclaim","name":"e","candidate":"c"}`,
		`{"id":10,"op":"campaign","name":"","candidate":"c"}`,
		`{"id":11,"op":"acquire","resource":"r","holder":"h","lockDelayMs":60001}`,
		`{"id":12,"op":"semaphore-acquire","name":"jobs","holder":"h","permits":2,"lockDelayMs":-1}`,
		`{"id":13,"op":"abdicate","name":"e","candidate":"c"}`,
		`{"id":14,"op":"campaign","name":"e","candidate":"c","value":"` + strings.Repeat("v", 4097) + `"}`,
	}
	answers := s.rpc().send(lines...)
	for id := uint64(1); id <= uint64(len(lines)); id++ {
		var body map[string]any
		json.Unmarshal(answers[id].Body, &body)
		if answers[id].Status != 400 || body["error"] == nil {
			t.Errorf("request %d: %d %s", id, answers[id].Status, answers[id].Body)
		}
	}
	if after := snapshot(s); after != before {
		t.Fatalf("bad requests changed state:\nbefore %s\nafter  %s", before, after)
	}
}

// byKind reads a metric with the one label kind from /metrics: a
// counter's or gauge's value, a histogram's count.
func byKind(t *testing.T, s *testServer, name string) map[string]float64 {
	t.Helper()
	r := s.do("GET", "/metrics", nil)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(r.Raw)))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	f := fams[name]
	if f == nil {
		t.Fatalf("no %s in /metrics", name)
	}
	out := map[string]float64{}
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != 1 || m.GetLabel()[0].GetName() != "kind" {
			t.Fatalf("%s labels %v", name, m.GetLabel())
		}
		v := m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		out[m.GetLabel()[0].GetValue()] = v
	}
	return out
}

// Grants are counted per kind, over the JSON API and the RPC stream alike;
// refusals are not grants; the kind label has its four values only.
func TestGrantMetricsByKind(t *testing.T) {
	s := startServer(t)
	s.acquire("r", "a", 60000)
	s.do("POST", "/v1/locks/r/acquire", `{"holder":"b"}`) // 409: no grant
	if a := s.rpc().send(`{"id":1,"op":"acquire","resource":"q","holder":"a"}`)[1]; a.Status != 200 {
		t.Fatalf("rpc acquire: %d %s", a.Status, a.Body)
	}
	want := map[string]float64{"lock": 2, "semaphore": 0, "multi": 0, "election": 0}
	for _, name := range []string{"fenceview_grant_wait_seconds", "fenceview_grants_by_kind_total"} {
		if got := byKind(t, s, name); !maps.Equal(got, want) {
			t.Fatalf("%s %v, want %v", name, got, want)
		}
	}
}
