package server_test

import (
	"testing"

	"github.com/fenceview/fenceview/internal/server"
	"github.com/fenceview/fenceview/internal/servertest"
)

// GET /v1/resources/{r} shows a resource's state of the primitives: the
// grant's lock-delay, a semaphore's permits on its slot 0, an election's flag and
// its leader's value; absent on a plain lock.
func TestResourceShowsPrimitivesState(t *testing.T) {
	s := servertest.Start(t, server.Config{AdminToken: admin})
	post := func(path string, body map[string]any) {
		t.Helper()
		if a := call(t, nil, "POST", s.URL()+path, admin, body); a.Status != 200 {
			t.Fatalf("POST %s: %d %s", path, a.Status, a.Raw)
		}
	}
	post("/v1/locks/plain/acquire", map[string]any{"holder": "a"})
	post("/v1/locks/delayed/acquire", map[string]any{"holder": "a", "lockDelayMs": 5000})
	post("/v1/semaphores/jobs/acquire", map[string]any{"holder": "a", "permits": 3})
	post("/v1/elections/leader/campaign", map[string]any{"candidate": "a", "value": "10.0.0.1"})
	get := func(id string) map[string]any {
		t.Helper()
		a := call(t, nil, "GET", s.URL()+"/v1/resources/"+id, admin, nil)
		if a.Status != 200 {
			t.Fatalf("GET %s: %d %s", id, a.Status, a.Raw)
		}
		return a.Body
	}
	plain := get("plain")
	for _, field := range []string{"lockDelayMs", "availableAt", "permits", "election", "value"} {
		if _, ok := plain[field]; ok {
			t.Errorf("a plain lock shows %s: %v", field, plain[field])
		}
	}
	if d := get("delayed")["lockDelayMs"]; d != 5000.0 {
		t.Errorf("lockDelayMs %v, want 5000", d)
	}
	if p := get("jobs%230")["permits"]; p != 3.0 {
		t.Errorf("slot 0's permits %v, want 3", p)
	}
	if e := get("leader"); e["election"] != true || e["value"] != "10.0.0.1" {
		t.Errorf("the election's resource: %v", e)
	}
}
