package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/issuer"
	"github.com/fenceview/fenceview/internal/wire"
)

// One request, one answer: every operation of the RPC stream, sent by
// every role that may open the stream, valid, with a stray field, with a
// bad value and aimed outside the key's prefixes, gets the same status and
// code over the JSON API as over the RPC stream. The two transports run
// the same story on twin resources, so state answers alike too.
func TestSameAnswerOverBothTransports(t *testing.T) {
	a := newCodesAPI(t, issuer.Config{}, nil)
	ctx := context.Background()
	keys := map[string]string{"admin": "admin"}
	for _, k := range []struct {
		name     string
		role     auth.Role
		prefixes []string
	}{{"client", auth.Client, nil}, {"guard", auth.Guard, nil}, {"orders-client", auth.Client, []string{"orders/"}}} {
		_, secret, err := a.s.Auth.Create(ctx, k.name, k.role, k.prefixes)
		if err != nil {
			t.Fatal(err)
		}
		keys[k.name] = secret
	}

	// The variants of one request: its body fields (a JSON object's inside).
	type variant struct{ name, fields string }
	type opCase struct {
		op       string
		target   string // "resource", "name" or "" (a multi-lock's resources are in its body)
		variants []variant
	}
	cases := []opCase{
		{wire.OpAcquire, "resource", []variant{{"valid", `"holder":"h","leaseMs":60000`}, {"again", `"holder":"g"`}, {"stray", `"holder":"h","zzz":1`}, {"bad", `"holder":""`}, {"bad-type", `"holder":"h","leaseMs":"soon"`}}},
		{wire.OpRenew, "resource", []variant{{"valid", `"holder":"h"`}, {"other", `"holder":"g"`}, {"stray", `"holder":"h","waitMs":5`}}},
		{wire.OpLock, "resource", []variant{{"valid", ``}}},
		{wire.OpFence, "resource", []variant{{"valid", `"token":1`}, {"stale", `"token":0`}, {"stray", `"token":1,"Token":2`}, {"bad", `"token":-3`}}},
		{wire.OpRelease, "resource", []variant{{"valid", `"holder":"h"`}, {"again", `"holder":"h"`}, {"stray", `"holder":"h","leaseMs":1`}}},
		{wire.OpSemaphoreAcquire, "name", []variant{{"valid", `"holder":"h","permits":2`}, {"mismatch", `"holder":"g","permits":3`}, {"stray", `"holder":"h","permits":2,"slot":1`}, {"bad", `"holder":"h","permits":0`}}},
		{wire.OpSemaphoreRelease, "name", []variant{{"valid", `"holder":"h","slot":0`}, {"stray", `"holder":"h","slot":0,"permits":2`}}},
		{wire.OpSemaphorePermits, "name", []variant{{"valid", `"permits":3`}, {"stray", `"permits":3,"zzz":true`}, {"bad", `"permits":-1`}}},
		{wire.OpSemaphore, "name", []variant{{"valid", ``}}},
		{wire.OpCampaign, "name", []variant{{"valid", `"candidate":"c","value":"v"`}, {"stray", `"candidate":"c","holder":"h"`}, {"bad", `"candidate":""`}}},
		{wire.OpProclaim, "name", []variant{{"valid", `"candidate":"c","value":"w"`}, {"not-leader", `"candidate":"d","value":"w"`}}},
		{wire.OpElectionRenew, "name", []variant{{"valid", `"candidate":"c"`}}},
		{wire.OpResign, "name", []variant{{"valid", `"candidate":"c"`}, {"again", `"candidate":"c"`}}},
		{wire.OpElection, "name", []variant{{"valid", ``}}},
		{wire.OpAcquireAll, "", []variant{{"valid", `"holder":"h","resources":[%s]`}, {"stray", `"holder":"h","resources":[%s],"zzz":0`}}},
		{wire.OpReleaseAll, "", []variant{{"valid", `"holder":"h","resources":[%s]`}}},
	}
	if len(cases) != len(rpcOpNames) {
		t.Fatalf("%d ops tested, %d on the RPC stream: test every one", len(cases), len(rpcOpNames))
	}

	for _, role := range []string{"admin", "client", "guard", "orders-client"} {
		ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(a.srv.URL, "http")+"/v1/rpc",
			http.Header{"Authorization": {"Bearer " + keys[role]}})
		if err != nil {
			t.Fatalf("%s: opening the RPC stream: %v", role, err)
		}
		defer ws.Close()
		for _, place := range []string{"", "orders/"} { // inside and outside orders-client's prefixes
			for _, c := range cases {
				o := opsByName[c.op]
				method, path, _ := strings.Cut(o.route, " ")
				for _, v := range c.variants {
					// Twin ids: what JSON does to one, RPC does to the other.
					id := func(transport string) string { return fmt.Sprintf("%s%s-%s-%s", place, role, c.op, transport) }
					answers := map[string][2]any{}
					for _, transport := range []string{"json", "rpc"} {
						fields := v.fields
						if strings.Contains(fields, "%s") {
							fields = fmt.Sprintf(fields, `"`+id(transport)+`-1","`+id(transport)+`-2"`)
						}
						if transport == "json" {
							p := strings.NewReplacer("{resource}", strings.ReplaceAll(id(transport), "/", "%2F"), "{name}", strings.ReplaceAll(id(transport), "/", "-")).Replace(path)
							body := ""
							if method != "GET" {
								body = "{" + fields + "}"
							}
							res, m := a.do(t, method, p, keys[role], body, nil)
							answers[transport] = [2]any{res.StatusCode, m["code"]}
							continue
						}
						line := fmt.Sprintf(`{"id":1,"op":%q`, c.op)
						switch c.target {
						case "resource":
							line += fmt.Sprintf(`,"resource":%q`, id(transport))
						case "name":
							line += fmt.Sprintf(`,"name":%q`, strings.ReplaceAll(id(transport), "/", "-"))
						}
						if fields != "" {
							line += "," + fields
						}
						line += "}"
						status, m := rpcLine(t, ws, line)
						answers[transport] = [2]any{status, m["code"]}
					}
					if answers["json"] != answers["rpc"] {
						t.Errorf("%s %s %s %q: JSON answers %v, RPC %v", role, c.op, v.name, place, answers["json"], answers["rpc"])
					}
				}
			}
		}
	}
}

// rpcLine sends one request line on ws and reads its answer.
func rpcLine(t *testing.T, ws *websocket.Conn, line string) (int, map[string]any) {
	t.Helper()
	if err := ws.WriteMessage(websocket.TextMessage, []byte(line)); err != nil {
		t.Fatal(err)
	}
	ws.SetReadDeadline(time.Now().Add(30 * time.Second)) // hang guard
	_, msg, err := ws.ReadMessage()
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	var ans wire.Answer
	var body map[string]any
	if err := wire.DecodeAnswer(msg, &ans); err != nil || json.Unmarshal(ans.Body, &body) != nil {
		t.Fatalf("answer %q: %v", msg, err)
	}
	return ans.Status, body
}
