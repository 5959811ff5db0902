package load

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A process's CPU time is read past its command name, which may hold
// spaces and parentheses, in Linux's clock ticks of 10 ms.
func TestParseProcStat(t *testing.T) {
	for line, want := range map[string]time.Duration{
		"4242 (fenceview) S 1 4242 4242 0 -1 4194560 1033 0 0 0 250 75 0 0 20 0 9 0 1201 1858101248 6143 184467": 3250 * time.Millisecond,
		"7 (a) b (c)) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 5 0 0 0":                                           30 * time.Millisecond,
	} {
		got, err := parseProcStat([]byte(line))
		if err != nil || got != want {
			t.Errorf("parseProcStat(%q) = %v, %v; want %v", line, got, err, want)
		}
	}
	for _, bad := range []string{
		"",
		"4242 fenceview S 1 2 3",
		"4242 (fenceview) S 1 4242",
		"4242 (fenceview) S 1 4242 4242 0 -1 4194560 1033 0 0 0 x 75 0",
		"4242 (fenceview) S 1 4242 4242 0 -1 4194560 1033 0 0 0 -5 75 0",
	} {
		if got, err := parseProcStat([]byte(bad)); err == nil {
			t.Errorf("parseProcStat(%q) = %v, want an error", bad, got)
		}
	}
}

// A server process that cannot be read fails the run before any load: a
// wrong -server-pid is a usage mistake, not a missing line in the report.
func TestRunRefusesAServerPIDItCannotRead(t *testing.T) {
	f := &fake{}
	const noSuchPID = 1 << 30 // above Linux's largest pid_max
	_, err := Run(context.Background(), Config{Clients: 1, Resources: 1, Duration: time.Millisecond, Mix: Mix{Grant: 1}, Prefix: "t", ServerPID: noSuchPID}, f)
	if err == nil || !strings.Contains(err.Error(), "server process 1073741824") {
		t.Fatalf("Run = %v, want an error naming the server process", err)
	}
	if f.next != nil {
		t.Error("the backend was prepared before the pid was checked")
	}
}
