package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
)

// serverBinary builds the real fenceview command once per test run.
func serverBinary(t *testing.T) string {
	t.Helper()
	return buildTool(t, "github.com/fenceview/fenceview/cmd/fenceview")
}

// TestMain removes the binaries the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	toolsMu.Lock()
	if toolDir != "" {
		os.RemoveAll(toolDir)
	}
	toolsMu.Unlock()
	os.Exit(code)
}

// process is a fenceview server running as its own OS process.
type process struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{}
}

var readyLine = regexp.MustCompile(`url=(http://\S+)/`)

func startProcess(t *testing.T, dbPath string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(serverBinary(t), append([]string{"--addr", "127.0.0.1:0", "--db", dbPath}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := readyLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
	}()
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.signal(syscall.SIGKILL); <-p.done })
	select {
	case p.url = <-urls:
	case <-p.done:
		t.Fatal("fenceview exited before it was ready")
	}
	return p
}

func (p *process) signal(sig syscall.Signal) {
	if p.cmd.Process != nil {
		p.cmd.Process.Signal(sig)
	}
}

// SIGTERM stops the server cleanly: it exits 0.
func TestSIGTERMStopsCleanly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a real process")
	}
	p := startProcess(t, filepath.Join(t.TempDir(), "f.db"))
	doRequest(t, "POST", p.url+"/v1/locks/r/acquire", map[string]any{"holder": "a"})
	p.signal(syscall.SIGTERM)
	<-p.done
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM", code)
	}
}

func decodeResponse(resp *http.Response) response {
	defer resp.Body.Close()
	var r response
	r.Status = resp.StatusCode
	json.NewDecoder(resp.Body).Decode(&r.Body)
	return r
}
