package servertest_test

import (
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/fenceview/fenceview/internal/clock"
	"github.com/fenceview/fenceview/internal/server"
	"github.com/fenceview/fenceview/internal/servertest"
)

func TestMain(m *testing.M) { servertest.Main(m) }

// acquire takes lock r for holder and returns its token.
func acquire(t *testing.T, base, holder string, leaseMs int) int64 {
	t.Helper()
	a := servertest.Do(t, nil, servertest.NewRequest(t, "POST", base+"/v1/locks/r/acquire", map[string]any{"holder": holder, "leaseMs": leaseMs}))
	f, _ := a.Body["fencing"].(map[string]any)
	token, _ := f["token"].(float64)
	if a.Status != http.StatusOK || token == 0 {
		t.Fatalf("acquire by %s: %d %s", holder, a.Status, a.Raw)
	}
	return int64(token)
}

// An in-process server runs on the fake clock it hands the test: a lease
// ends when the test moves the clock, not before.
func TestStartRunsOnTheTestsClock(t *testing.T) {
	s := servertest.Start(t, server.Config{})
	if s.Clock == nil || !s.Clock.Now().Equal(clock.TestDate) {
		t.Fatalf("clock %v, want a fake clock at %v", s.Clock, clock.TestDate)
	}
	first := acquire(t, s.URL(), "a", 1000)
	busy := servertest.Do(t, nil, servertest.NewRequest(t, "POST", s.URL()+"/v1/locks/r/acquire", `{"holder":"b"}`))
	if busy.Status == http.StatusOK {
		t.Fatalf("a held lock granted again before its lease ended: %s", busy.Raw)
	}
	s.Clock.Advance(2 * time.Second)
	if next := acquire(t, s.URL(), "b", 1000); next <= first {
		t.Fatalf("token after expiry %d, want above %d", next, first)
	}
}

// A process killed and restarted keeps its database: the next token is
// above the last one issued before the kill, and the restart is another
// process answering on its own port.
func TestRestartKeepsTheDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the command as a process")
	}
	p := servertest.StartProcess(t, servertest.ProcessOptions{})
	before := acquire(t, p.URL, "a", 60000)
	if a := servertest.Do(t, nil, servertest.NewRequest(t, "POST", p.URL+"/v1/locks/r/release", `{"holder":"a"}`)); a.Status != http.StatusOK {
		t.Fatalf("release: %d %s", a.Status, a.Raw)
	}
	next := p.Restart()
	if p.ExitCode() != -1 {
		t.Fatalf("the killed process exited with %d, want a death by signal", p.ExitCode())
	}
	if next.DBPath != p.DBPath {
		t.Fatalf("restarted on %s, want %s", next.DBPath, p.DBPath)
	}
	if after := acquire(t, next.URL, "b", 60000); after <= before {
		t.Fatalf("token after the restart %d, want above %d", after, before)
	}
	next.Signal(syscall.SIGTERM)
	<-next.Done
	if next.ExitCode() != 0 {
		t.Fatalf("exit code %d after SIGTERM:\n%s", next.ExitCode(), next.Log())
	}
}
