package main

import (
	"encoding/json"
	"io"
	"net/http"
	"syscall"
	"testing"

	"github.com/fenceview/fenceview/internal/servertest"
)

// processTest skips the test in -short: it builds the command and runs
// it as processes.
func processTest(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the command and runs it as processes")
	}
}

// SIGTERM stops the server cleanly: it exits 0.
func TestSIGTERMStopsCleanly(t *testing.T) {
	processTest(t)
	p := servertest.StartProcess(t, servertest.ProcessOptions{})
	doRequest(t, "POST", p.URL+"/v1/locks/r/acquire", map[string]any{"holder": "a"})
	p.Signal(syscall.SIGTERM)
	<-p.Done
	if code := p.ExitCode(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM", code)
	}
}

func decodeResponse(resp *http.Response) response {
	defer resp.Body.Close()
	var r response
	r.Status = resp.StatusCode
	r.Raw, _ = io.ReadAll(resp.Body)
	json.Unmarshal(r.Raw, &r.Body)
	return r
}
