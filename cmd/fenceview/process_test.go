package main

import (
	"encoding/json"
	"io"
	"net/http"
	"syscall"
	"testing"

	"github.com/fenceview/fenceview/internal/servertest"
)

// SIGTERM stops the server cleanly: it exits 0.
func TestSIGTERMStopsCleanly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a real process")
	}
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
