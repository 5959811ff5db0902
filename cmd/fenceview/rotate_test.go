package main

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview/internal/servertest"
)

// The admin token is rotated without a restart: write the new one to
// --admin-token-file and send SIGHUP. The old token then gets 401 and its
// open stream ends (close 1008); the new one works.
func TestSIGHUPRereadsTheAdminTokenFile(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "admin-token")
	const old, next = "old-admin-token-0123456789abcdef0123", "new-admin-token-0123456789abcdef0123"
	if err := os.WriteFile(tokenFile, []byte(old+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := servertest.StartProcess(t, servertest.ProcessOptions{DBPath: filepath.Join(dir, "f.db"), Args: []string{"--admin-token-file", tokenFile}})
	stream := dialStream(t, p.URL, "", http.Header{"Authorization": {"Bearer " + old}})
	if r := doRequest(t, "GET", p.URL+"/v1/resources", nil, "Authorization", "Bearer "+old); r.Status != 200 {
		t.Fatalf("the file's token: %d %s", r.Status, r.Raw)
	}
	if err := os.WriteFile(tokenFile, []byte(next+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.Signal(syscall.SIGHUP)
	stream.conn.SetReadDeadline(time.Now().Add(hangGuard))
	for {
		_, _, err := stream.conn.ReadMessage()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation {
			t.Fatalf("the old token's stream after SIGHUP: %v, want close 1008", err)
		}
		break
	}
	if r := doRequest(t, "GET", p.URL+"/v1/resources", nil, "Authorization", "Bearer "+old); r.Status != 401 {
		t.Fatalf("the old token after SIGHUP: %d", r.Status)
	}
	if r := doRequest(t, "GET", p.URL+"/v1/resources", nil, "Authorization", "Bearer "+next); r.Status != 200 {
		t.Fatalf("the new token after SIGHUP: %d %s", r.Status, r.Raw)
	}
	select {
	case <-p.Done:
		t.Fatal("SIGHUP ended the server")
	default:
	}
}
