package main

import (
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fenceview/fenceview/internal/servertest"
)

// The pause, for real: holder A (its own process, the Go client's
// Mutex.Lock with the watchdog renewing) is frozen with SIGSTOP past its
// lease; B (another process) acquires and writes; A is resumed with SIGCONT
// and writes with the token it still remembers. The write is refused
// (stale-token), recorded in the server's rejection history and streamed.
// Once through the server's fence endpoint, once through the WebAssembly
// guard in examples/wasmplugin, which runs as a third process and reports
// its refusal to the server.
func TestPauseForReal(t *testing.T) {
	processTest(t)
	t.Run("fence endpoint", func(t *testing.T) { pauseForReal(t, false) })
	t.Run("wasm plugin", func(t *testing.T) { pauseForReal(t, true) })
}

func pauseForReal(t *testing.T, viaPlugin bool) {
	const res = "order:1042"
	// Long enough for the watchdog's renewals (every third of it) to keep
	// up on a busy machine; the test waits on events, not on this number.
	const lease = 1500 * time.Millisecond

	servertest.Build(t, "github.com/fenceview/fenceview/internal/proof/holder") // before the clock starts
	srv := servertest.StartProcess(t, servertest.ProcessOptions{})
	events := dialStream(t, srv.URL, "?resource="+res, nil)
	var plugin string
	wantSource := "holder:holder-a"
	if viaPlugin {
		plugin = startPluginProcess(t, srv.URL)
		wantSource = "wasm:wasmplugin"
	}
	started := time.Now()

	a := startHolder(t, srv.URL, plugin, res, "holder-a", lease)
	tokA := a.expect("locked").Token
	if r := a.do("write from-a-1", "wrote"); r.Status != 200 {
		t.Fatalf("A's first write: %+v", r)
	}
	// The watchdog is alive: it has renewed A's lease at least once.
	events.waitFor("A's renewal", func(e event) bool { return e.Type == "renew" && e.Holder == "holder-a" })
	if r := a.do("check", "checked"); !r.Live {
		t.Fatalf("A's lease lost before the pause: %+v", r)
	}

	// A is frozen between checking its lease and writing.
	a.signal(syscall.SIGSTOP)
	stopped := time.Now()
	exp := events.waitFor("A's lease to expire", func(e event) bool { return e.Type == "expire" })
	if lock := doRequest(t, "GET", srv.URL+"/v1/locks/"+res, nil); lock.Body["locked"] != false {
		t.Fatalf("after the expire event (%+v) the lock is %s", exp, lock.Raw)
	}

	b := startHolder(t, srv.URL, plugin, res, "holder-b", lease)
	tokB := b.expect("locked").Token
	if tokB <= tokA {
		t.Fatalf("B's token %d is not above A's %d", tokB, tokA)
	}
	if r := b.do("write from-b", "wrote"); r.Status != 200 {
		t.Fatalf("B's write: %+v", r)
	}

	a.signal(syscall.SIGCONT)
	paused := time.Since(stopped)
	r := a.do("write from-a-2", "wrote")
	if r.Status != 409 || r.Reason != "stale-token" || r.Token != tokA || r.Required != tokB {
		t.Fatalf("A's write after the pause: %+v, want 409 stale-token required %d", r, tokB)
	}

	// Streamed: the plugin's reporter sends its refusal in the background,
	// so wait for the event, then read the history it was recorded with.
	rej := events.waitFor("the refusal", func(e event) bool { return e.Type == "reject" })
	if rej.Presented == nil || *rej.Presented != tokA || rej.Required == nil || *rej.Required != tokB ||
		rej.Reason != "stale-token" || rej.Source != wantSource {
		t.Fatalf("reject event = %+v (presented %v, required %v), want %d refused for %d from %s",
			rej, deref(rej.Presented), deref(rej.Required), tokA, tokB, wantSource)
	}
	hist := doRequest(t, "GET", srv.URL+"/v1/rejections?resource="+res, nil)
	rows, _ := hist.Body["rejections"].([]any)
	if hist.Status != 200 || len(rows) != 1 {
		t.Fatalf("rejection history: %d %s", hist.Status, hist.Raw)
	}
	row := rows[0].(map[string]any)
	if row["reason"] != "stale-token" || row["presented"] != float64(tokA) || row["required"] != float64(tokB) || row["source"] != wantSource {
		t.Fatalf("recorded rejection = %v", row)
	}

	// B's write stands; A's watchdog has given the lease up.
	if viaPlugin {
		// The plugin is not fenceview: read it without the API spec's check.
		v, err := http.Get(plugin + "/kv/" + res)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(v.Body)
		v.Body.Close()
		if string(raw) != "from-b" {
			t.Fatalf("value after the late write = %q, want from-b", raw)
		}
	} else if s := doRequest(t, "GET", srv.URL+"/v1/resources/"+res, nil); s.num("highWaterMark") != tokB {
		t.Fatalf("high-water mark after the late write: %s", s.Raw)
	}
	if lost := a.do("wait-lost", "lost"); !strings.Contains(lost.Cause, "lease lost") {
		t.Fatalf("A's watchdog ended the hold with %q", lost.Cause)
	}
	if lock := doRequest(t, "GET", srv.URL+"/v1/locks/"+res, nil); lock.Body["holder"] != "holder-b" || lock.num("token") != tokB {
		t.Fatalf("lock after A resumed: %s", lock.Raw)
	}
	b.do("unlock", "unlocked")
	t.Logf("A (token %d) frozen %v; B (token %d) wrote; A refused; scenario took %v",
		tokA, paused.Round(time.Millisecond), tokB, time.Since(started).Round(time.Millisecond))
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}
