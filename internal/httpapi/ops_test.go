package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/api"
	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/issuer"
)

// openAPIDoc is the served OpenAPI document, parsed.
func openAPIDoc(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(api.JSON())
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestOperationsMatchOpenAPI: the operations table and the OpenAPI
// document describe the same API: the same routes under /v1 (cluster
// mode's own aside), the same RPC ops, and for each operation with a body
// the same body fields.
func TestOperationsMatchOpenAPI(t *testing.T) {
	doc := openAPIDoc(t)
	var documented []string
	for path, item := range doc.Paths.Map() {
		if !strings.HasPrefix(path, "/v1/") || path == "/v1/cluster" {
			continue
		}
		for method := range item.Operations() {
			documented = append(documented, method+" "+path)
		}
	}
	var declared []string
	for _, o := range operations {
		declared = append(declared, o.route)
	}
	sort.Strings(documented)
	sort.Strings(declared)
	if !slices.Equal(documented, declared) {
		t.Errorf("routes differ\ndocument: %v\ntable:    %v", documented, declared)
	}

	rpc := doc.Components.Schemas["RpcRequest"]
	if rpc == nil {
		t.Fatal("no RpcRequest schema")
	}
	var enum []string
	for _, v := range rpc.Value.Properties["op"].Value.Enum {
		enum = append(enum, v.(string))
	}
	ops := slices.Clone(rpcOpNames)
	sort.Strings(enum)
	sort.Strings(ops)
	if !slices.Equal(enum, ops) {
		t.Errorf("RPC ops differ\ndocument: %v\ntable:    %v", enum, ops)
	}

	for _, o := range operations {
		if o.serve == nil || strings.HasPrefix(o.route, "GET ") {
			continue
		}
		method, path, _ := strings.Cut(o.route, " ")
		op := doc.Paths.Find(path).GetOperation(method)
		var props []string
		if op.RequestBody != nil {
			for name := range op.RequestBody.Value.Content.Get("application/json").Schema.Value.Properties {
				props = append(props, name)
			}
		}
		fields := o.fields.Names()
		sort.Strings(props)
		sort.Strings(fields)
		if !slices.Equal(props, fields) {
			t.Errorf("%s: body fields differ\ndocument: %v\ntable:    %v", o.route, props, fields)
		}
		for _, f := range fields {
			if rpc.Value.Properties[f] == nil && o.op != "" {
				t.Errorf("%s: field %s is not in RpcRequest", o.op, f)
			}
		}
	}
}

// TestOperationsOverRPC: every RPC op answers as its route does, because
// both are the table's one serve: a story of every op told once over the
// JSON API and once over the RPC stream gets the same statuses, and a
// body field the op does not define gets the same unknown-field refusal.
func TestOperationsOverRPC(t *testing.T) {
	a := newCodesAPI(t, issuer.Config{}, nil)
	// One step per op; %s is the story's suffix, so the two tellings touch
	// different locks.
	story := []struct{ op, target, body string }{
		{"acquire", "lock%s", `{"holder":"a","leaseMs":5000}`},
		{"renew", "lock%s", `{"holder":"a","leaseMs":5000}`},
		{"lock", "lock%s", ``},
		{"fence", "lock%s", `{"token":1}`},
		{"release", "lock%s", `{"holder":"a"}`},
		{"acquire", "doc%s", `{"holder":"r","leaseMs":5000,"shared":true}`},
		{"fence", "doc%s", `{"token":1,"access":"read"}`},
		{"semaphore-acquire", "sem%s", `{"holder":"a","permits":2}`},
		{"semaphore", "sem%s", ``},
		{"semaphore-permits", "sem%s", `{"permits":3}`},
		{"semaphore-release", "sem%s", `{"holder":"a","slot":0}`},
		{"acquire-all", "", `{"resources":["m1%s","m2%s"],"holder":"a"}`},
		{"release-all", "", `{"resources":["m1%s","m2%s"],"holder":"a"}`},
		{"campaign", "vote%s", `{"candidate":"a","value":"v1"}`},
		{"proclaim", "vote%s", `{"candidate":"a","value":"v2"}`},
		{"election-renew", "vote%s", `{"candidate":"a"}`},
		{"election", "vote%s", ``},
		{"resign", "vote%s", `{"candidate":"a"}`},
	}
	var told []string
	for _, step := range story {
		told = append(told, step.op)
	}
	for _, op := range rpcOpNames {
		if !slices.Contains(told, op) {
			t.Fatalf("op %s has no step in this story: add one", op)
		}
	}
	admin := http.Header{}
	for _, step := range story {
		o := opsByName[step.op]
		method, path, _ := strings.Cut(o.route, " ")
		target := strings.ReplaceAll(step.target, "%s", "-json")
		path = strings.NewReplacer("{resource}", target, "{name}", target).Replace(path)
		body := strings.ReplaceAll(step.body, "%s", "-json")
		resp, jsonBody := a.do(t, method, path, "admin", body, admin)

		line := map[string]any{"id": 1, "op": step.op}
		if step.body != "" {
			if err := json.Unmarshal([]byte(strings.ReplaceAll(step.body, "%s", "-rpc")), &line); err != nil {
				t.Fatal(err)
			}
		}
		switch o.target {
		case targetResource:
			line["resource"] = strings.ReplaceAll(step.target, "%s", "-rpc")
		case targetName:
			line["name"] = strings.ReplaceAll(step.target, "%s", "-rpc")
		}
		b, _ := json.Marshal(line)
		status, rpcBody := a.rpc(t, string(b))
		if resp.StatusCode != http.StatusOK || status != http.StatusOK {
			t.Errorf("%s: JSON %d %v, RPC %d %v; want 200 from both", step.op, resp.StatusCode, jsonBody, status, rpcBody)
		}

		if step.body == "" {
			continue // a GET has no body to hold a stray field
		}
		line["leese"] = 1
		b, _ = json.Marshal(line)
		status, rpcBody = a.rpc(t, string(b))
		resp, jsonBody = a.do(t, method, path, "admin", strings.Replace(body, "{", `{"leese":1,`, 1), admin)
		for _, got := range []map[string]any{jsonBody, rpcBody} {
			if got["code"] != fenceview.EUNKNOWNFIELD || got["field"] != "leese" {
				t.Errorf("%s with a stray field: %v, want unknown-field naming leese", step.op, got)
			}
		}
		if resp.StatusCode != http.StatusBadRequest || status != http.StatusBadRequest {
			t.Errorf("%s with a stray field: JSON %d, RPC %d; want 400 from both", step.op, resp.StatusCode, status)
		}
	}
}

// TestEveryRouteHasItsAction: the access map is the table's, and a
// state-changing route outside it is admin's, closed rather than open.
func TestEveryRouteHasItsAction(t *testing.T) {
	for _, o := range operations {
		action, public := actionOf(o.route)
		if public != o.public || (!public && action != o.action) {
			t.Errorf("%s: actionOf = %v, %v; the table says %v, %v", o.route, action, public, o.action, o.public)
		}
	}
	if a, public := actionOf("POST /v1/something-new"); public || a != auth.Manage {
		t.Errorf("an unlisted state-changing route is not admin's: %v, %v", a, public)
	}
}

// TestEscapeHintsFollowTheTable: every route naming a resource or a
// primitive gets a hint when its id has an unescaped slash.
func TestEscapeHintsFollowTheTable(t *testing.T) {
	for _, o := range operations {
		if o.target == targetNone {
			continue
		}
		method, path, _ := strings.Cut(o.route, " ")
		unescaped := strings.NewReplacer("{resource}", "orders/2", "{name}", "orders/2").Replace(path)
		want := strings.NewReplacer("{resource}", "orders%2F2", "{name}", "orders%2F2").Replace(path)
		if got := escapeHint(method, unescaped); got != want {
			t.Errorf("%s: hint for %s is %q, want %q", o.route, unescaped, got, want)
		}
	}
	if got := escapeHint(http.MethodPost, "/v1/locks/orders/2/frobnicate"); got != "" {
		t.Errorf("a verb no route has got a hint: %q", got)
	}
}

// Shared locks over both transports: readers of one phase get its token
// and say shared, the lock lists them, a read with the token is accepted
// and a write refused shared-token, and the read is an event that says so.
func TestSharedLocksOverJSONAndRPC(t *testing.T) {
	a := newCodesAPI(t, issuer.Config{}, nil)
	res, g1 := a.do(t, "POST", "/v1/locks/doc/acquire", "admin", `{"holder":"r1","shared":true}`, nil)
	status, g2 := a.rpc(t, `{"id":1,"op":"acquire","resource":"doc","holder":"r2","shared":true}`)
	f1, _ := g1["fencing"].(map[string]any)
	f2, _ := g2["fencing"].(map[string]any)
	if res.StatusCode != 200 || status != 200 || g1["shared"] != true || g2["shared"] != true || f1["shared"] != true ||
		f2["shared"] != true || f1["token"] != f2["token"] {
		t.Fatalf("two readers: %d %v; %d %v", res.StatusCode, g1, status, g2)
	}
	_, ls := a.do(t, "GET", "/v1/locks/doc", "admin", ``, nil)
	holders, _ := ls["holders"].([]any)
	if ls["shared"] != true || len(holders) != 2 || holders[1].(map[string]any)["holder"] != "r2" {
		t.Fatalf("the lock: %v", ls)
	}
	if res, m := a.do(t, "POST", "/v1/locks/doc/acquire", "admin", `{"holder":"w"}`, nil); res.StatusCode != 409 || m["code"] != fenceview.ELOCKHELD {
		t.Fatalf("a writer: %d %v", res.StatusCode, m)
	}
	read := http.Header{"X-Fencing-Access": {"read"}}
	if res, m := a.do(t, "POST", "/v1/fence/doc", "admin", `{"token":1}`, read); res.StatusCode != 200 {
		t.Fatalf("a read with the phase's token: %d %v", res.StatusCode, m)
	}
	if status, m := a.rpc(t, `{"id":1,"op":"fence","resource":"doc","token":1}`); status != 409 || m["code"] != fenceview.ESHAREDTOKEN {
		t.Fatalf("a write with it over RPC: %d %v", status, m)
	}
	if res, m := a.do(t, "POST", "/v1/decisions", "admin", `{"decisions":[{"resourceId":"doc","token":1,"accepted":true,"source":"plugin","access":"read"}]}`, nil); res.StatusCode != 200 {
		t.Fatalf("a guard's report of a read: %d %v", res.StatusCode, m)
	}
	if res, m := a.do(t, "POST", "/v1/decisions", "admin", `{"decisions":[{"resourceId":"doc","token":1,"accepted":true,"source":"plugin","access":"peek"}]}`, nil); res.StatusCode != 400 {
		t.Fatalf("a report with access peek: %d %v", res.StatusCode, m)
	}
	events, err := a.s.History.ResourceEvents(context.Background(), "doc", 50)
	if err != nil {
		t.Fatal(err)
	}
	var reads, writes int
	for _, e := range events {
		switch {
		case e.Type == fenceview.EventAccept && e.Access == fenceview.AccessRead:
			reads++
		case e.Type == fenceview.EventReject && e.Access == "" && e.Reason == fenceview.ESHAREDTOKEN:
			writes++
		}
	}
	if reads != 2 || writes != 1 {
		t.Fatalf("history %+v: want two accepted reads (fenced, reported) and one refused write", events)
	}
}
