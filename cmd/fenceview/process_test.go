package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"syscall"
	"testing"
)

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
