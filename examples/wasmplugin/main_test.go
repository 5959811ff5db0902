package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fenceview/fenceview/client/fenceviewtest"
)

// plugin is a running wasmplugin.
type plugin struct {
	url  string
	stop func() error
	out  *strings.Builder
}

func startPlugin(t *testing.T, args ...string) *plugin {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, append([]string{"--addr", "127.0.0.1:0"}, args...), pw)
		pw.CloseWithError(io.EOF)
		done <- err
	}()
	p := &plugin{out: &strings.Builder{}}
	urls := make(chan string, 1)
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			p.out.WriteString(sc.Text() + "\n")
			if u, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				urls <- u
			}
		}
	}()
	select {
	case p.url = <-urls:
	case err := <-done:
		cancel()
		t.Fatalf("wasmplugin exited before serving: %v", err)
	}
	var stopped bool
	p.stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		err := <-done
		<-lines
		return err
	}
	t.Cleanup(func() { p.stop() })
	return p
}

type reply struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func call(t *testing.T, method, url, body string, header ...string) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	json.Unmarshal(raw, &r.body)
	return r
}

func (r reply) num(k string) int64 {
	v, _ := r.body[k].(float64)
	return int64(v)
}

// The story the example exists for: a holder that lost its lock (paused,
// lease expired, lock re-granted) writes late; the WebAssembly guard refuses
// it, the refusal lands in fenceview's history, and it stays refused after
// the plugin restarts, from its own state file or from the server.
func TestStaleWriterRefusedAndReported(t *testing.T) {
	fv := fenceviewtest.New(t).URL
	acquire := func(holder string) int64 {
		r := call(t, "POST", fv+"/v1/locks/orders/acquire", `{"holder":"`+holder+`","leaseMs":30000}`)
		if r.status != 200 {
			t.Fatalf("acquire %s: %d %s", holder, r.status, r.raw)
		}
		return int64(r.body["fencing"].(map[string]any)["token"].(float64))
	}
	tokA := acquire("client-a")
	if r := call(t, "POST", fv+"/v1/locks/orders/expire", ""); r.status != 200 {
		t.Fatalf("expire: %d %s", r.status, r.raw)
	}
	tokB := acquire("client-b")
	if tokB <= tokA {
		t.Fatalf("tokens %d then %d do not increase", tokA, tokB)
	}

	state := filepath.Join(t.TempDir(), "state.json")
	p := startPlugin(t, "--state", state, "--fenceview", fv)
	put := func(p *plugin, token, value string) reply {
		return call(t, "PUT", p.url+"/kv/orders", value, "X-Fencing-Token", token)
	}
	if r := put(p, strconv.FormatInt(tokB, 10), "from-b"); r.status != 200 || r.body["stored"] != true {
		t.Fatalf("write by the current holder: %d %s", r.status, r.raw)
	}
	r := put(p, strconv.FormatInt(tokA, 10), "from-a")
	if r.status != 409 || r.body["reason"] != "stale-token" || r.num("required") != tokB ||
		r.header.Get("X-Required-Token") != strconv.FormatInt(tokB, 10) {
		t.Fatalf("late write by the old holder: %d %v %s", r.status, r.header, r.raw)
	}
	for _, bad := range []string{"", "0", "-1", "abc", "1.5"} {
		if r := put(p, bad, "x"); r.status != 400 {
			t.Errorf("token %q: %d, want 400", bad, r.status)
		}
	}
	if r := call(t, "PUT", p.url+"/kv/"+strings.Repeat("r", 161), "x", "X-Fencing-Token", "1"); r.status != 400 {
		t.Errorf("161-byte resource: %d, want 400", r.status)
	}
	if r := call(t, "GET", p.url+"/kv/orders", ""); r.raw != "from-b" {
		t.Fatalf("value = %q, want from-b", r.raw)
	}
	// Stopping sends what the reporter still holds.
	if err := p.stop(); err != nil {
		t.Fatal(err)
	}

	rej := call(t, "GET", fv+"/v1/rejections?resource=orders", "")
	list, _ := rej.body["rejections"].([]any)
	if rej.status != 200 || len(list) != 1 {
		t.Fatalf("rejections: %d %s", rej.status, rej.raw)
	}
	got := list[0].(map[string]any)
	if got["presented"] != float64(tokA) || got["required"] != float64(tokB) ||
		got["reason"] != "stale-token" || got["source"] != "wasm:wasmplugin" {
		t.Fatalf("rejection recorded = %v", got)
	}
	res := call(t, "GET", fv+"/v1/resources/orders", "")
	if res.num("rejected") != 1 || res.num("accepted") != 1 || res.num("highWaterMark") != tokB {
		t.Fatalf("resource on the server = %s", res.raw)
	}

	// Restarted on its state file, without the server: still refused.
	p2 := startPlugin(t, "--state", state)
	if r := put(p2, strconv.FormatInt(tokA, 10), "from-a"); r.status != 409 || r.num("required") != tokB {
		t.Fatalf("after restart from the state file: %d %s", r.status, r.raw)
	}
	if r := call(t, "GET", p2.url+"/kv/orders", ""); r.raw != "from-b" {
		t.Fatalf("value after restart = %q", r.raw)
	}
	p2.stop()

	// A fresh plugin with no state learns the mark from the server.
	p3 := startPlugin(t, "--state", filepath.Join(t.TempDir(), "empty.json"), "--fenceview", fv)
	if !strings.Contains(p3.out.String(), "seeded 1 marks") {
		t.Errorf("output = %q, want the seeding reported", p3.out.String())
	}
	if r := put(p3, strconv.FormatInt(tokA, 10), "from-a"); r.status != 409 || r.num("required") != tokB {
		t.Fatalf("fresh plugin seeded from the server: %d %s", r.status, r.raw)
	}
}

// With the server down the plugin still guards (from its own state) and
// answers every write; it only loses the reports.
func TestServerDownStillGuards(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	state := filepath.Join(t.TempDir(), "state.json")
	p := startPlugin(t, "--state", state, "--fenceview", deadURL)
	if r := call(t, "PUT", p.url+"/kv/k", "v1", "X-Fencing-Token", "7"); r.status != 200 {
		t.Fatalf("write with the server down: %d %s", r.status, r.raw)
	}
	if r := call(t, "PUT", p.url+"/kv/k", "v0", "X-Fencing-Token", "6"); r.status != 409 {
		t.Fatalf("stale write with the server down: %d %s", r.status, r.raw)
	}
	if err := p.stop(); err != nil {
		t.Fatal(err)
	}
	out := p.out.String()
	if !strings.Contains(out, "seeding from") || !strings.Contains(out, "2 decisions could not be reported") {
		t.Fatalf("output = %q, want the seeding failure and the 2 lost reports", out)
	}
}
