package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview/internal/servertest"
)

// Helpers of the pause and linearizability tests: helper programs run as
// their own processes (built by buildTool), and the event stream of a
// server.

// hangGuard bounds a wait that should end on a condition; it only turns a
// hang into a failure and asserts nothing about timing.
const hangGuard = 30 * time.Second

// holderReply is one line the holder program prints.
type holderReply struct {
	Event    string `json:"event"`
	Token    int64  `json:"token"`
	Status   int    `json:"status"`
	Reason   string `json:"reason"`
	Required int64  `json:"required"`
	Live     bool   `json:"live"`
	Cause    string `json:"cause"`
	Error    string `json:"error"`
}

// holderProc is the holder program (internal/proof/holder) running as its
// own process.
type holderProc struct {
	t       *testing.T
	name    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	replies chan holderReply
	done    chan struct{}
	stderr  servertest.LogBuffer // the program's stderr, for a failure's message
}

func startHolder(t *testing.T, server, plugin, resource, holder string, lease time.Duration) *holderProc {
	t.Helper()
	args := []string{"--server", server, "--resource", resource, "--holder", holder, "--lease", lease.String()}
	if plugin != "" {
		args = append(args, "--plugin", plugin)
	}
	h := &holderProc{t: t, name: holder, replies: make(chan holderReply, 16), done: make(chan struct{})}
	h.cmd = exec.Command(servertest.Build(t, "github.com/fenceview/fenceview/internal/proof/holder"), args...)
	h.cmd.Stderr = &h.stderr
	stdout, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if h.stdin, err = h.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var r holderReply
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				r = holderReply{Event: "garbage", Error: sc.Text()}
			}
			h.replies <- r
		}
		h.cmd.Wait()
		close(h.done)
	}()
	t.Cleanup(func() {
		// SIGKILL ends a stopped process too.
		h.cmd.Process.Signal(syscall.SIGKILL)
		<-h.done
	})
	return h
}

// expect waits for the holder's next line, which must be event.
func (h *holderProc) expect(event string) holderReply {
	h.t.Helper()
	check := func(r holderReply) holderReply {
		if r.Event != event || r.Error != "" {
			h.t.Fatalf("%s: got %+v, want %s", h.name, r, event)
		}
		return r
	}
	select {
	case r := <-h.replies:
		return check(r)
	case <-h.done:
		// The last lines may still be queued.
		select {
		case r := <-h.replies:
			return check(r)
		default:
		}
		h.t.Fatalf("%s exited (%v): %s", h.name, h.cmd.ProcessState, h.stderr.String())
	case <-time.After(hangGuard):
		h.t.Fatalf("%s: no %s line", h.name, event)
	}
	return holderReply{}
}

// do sends one command and returns its answer.
func (h *holderProc) do(cmd, event string) holderReply {
	h.t.Helper()
	if _, err := fmt.Fprintln(h.stdin, cmd); err != nil {
		h.t.Fatalf("%s: %v", h.name, err)
	}
	return h.expect(event)
}

func (h *holderProc) signal(sig syscall.Signal) {
	h.t.Helper()
	if err := h.cmd.Process.Signal(sig); err != nil {
		h.t.Fatalf("%s: %v: %v", h.name, sig, err)
	}
}

// startPluginProcess runs examples/wasmplugin as its own process, reporting
// to the fenceview server at server, and returns its URL.
func startPluginProcess(t *testing.T, server string) string {
	t.Helper()
	cmd := exec.Command(servertest.Build(t, "github.com/fenceview/fenceview/examples/wasmplugin"),
		"--addr", "127.0.0.1:0", "--state", filepath.Join(t.TempDir(), "state.json"), "--fenceview", server)
	c, url, err := servertest.StartCommand(t, cmd, func(line string) string {
		if url, ok := strings.CutPrefix(line, "listening on "); ok {
			return url
		}
		return ""
	})
	if err != nil {
		t.Fatalf("wasmplugin: %v: %s", err, c.Log())
	}
	return url
}

// dialStream connects to the event stream of the server at base, sending
// header (nil for none).
func dialStream(t testing.TB, base, query string, header http.Header) *stream {
	t.Helper()
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/v1/events"+query, header)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &stream{t: t, conn: conn}
}

// waitFor reads the stream until an event matches.
func (st *stream) waitFor(what string, match func(event) bool) event {
	st.t.Helper()
	for {
		e := st.next()
		if match(e) {
			return e
		}
		if testing.Verbose() {
			st.t.Logf("waiting for %s; skipped %s %s token=%d holder=%q", what, e.Type, e.ResourceID, e.Token, e.Holder)
		}
	}
}
