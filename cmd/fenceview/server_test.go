package main

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/fenceview/fenceview/internal/clock"
)

// The one place the tests of the command start a fenceview server: in this
// process (startServer: the command's Main, configured as a test needs, on
// a fake clock) or as its own OS process (startProcess: the built binary,
// for signals and kills). Programs the tests run beside it are built once
// by buildTool.

var t0 = clock.TestDate

// testServer is the real fenceview server on 127.0.0.1:0 with a temporary
// SQLite file.
type testServer struct {
	*Main
	t     testing.TB
	clock *clock.Fake // nil when a test gave the server another clock
	// bearer is sent as the credential of requests that give none: the
	// admin token when the server has one.
	bearer string
}

// startServer runs the command's Main in this process on 127.0.0.1:0, a
// new SQLite file and a fake clock at t0; configure changes any of that
// before it starts. The server closes when the test ends.
func startServer(t testing.TB, configure ...func(*Main)) *testServer {
	t.Helper()
	m := NewMain()
	m.Addr = "127.0.0.1:0"
	m.DBPath = filepath.Join(t.TempDir(), "fenceview.db")
	m.Logger = slog.New(slog.DiscardHandler)
	m.Clock = clock.NewFake(t0)
	for _, f := range configure {
		f(m)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	fc, _ := m.Clock.(*clock.Fake)
	return &testServer{Main: m, t: t, clock: fc, bearer: m.AdminToken}
}

// realClock runs a server on the wall clock (benchmarks).
func realClock(m *Main) { m.Clock = clock.Real{} }

// process is a fenceview server running as its own OS process.
type process struct {
	cmd   *exec.Cmd
	url   string
	ready string // the line it logged when it was ready
	done  chan struct{}
	// logged is closed once the process's stderr is read to its end.
	logged chan struct{}
}

var readyLine = regexp.MustCompile(`url=(http://\S+)/`)

// startProcess runs the built fenceview command on 127.0.0.1:0 and dbPath,
// with args, and returns once it logs its URL. It is killed when the test
// ends, if it still runs.
func startProcess(t *testing.T, dbPath string, args ...string) *process {
	t.Helper()
	p, err := launchProcess(t, serverBinary(t), dbPath, args...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// launchProcess is startProcess for the binary bin (a build of the command
// with other flags), and an error, not a failed test, when the process
// exits before it is ready: the process is returned then too, exited.
func launchProcess(t *testing.T, bin, dbPath string, args ...string) (*process, error) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--addr", "127.0.0.1:0", "--db", dbPath}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, done: make(chan struct{}), logged: make(chan struct{})}
	lines := make(chan string, 1)
	go func() {
		defer close(p.logged)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if readyLine.MatchString(sc.Text()) {
				select {
				case lines <- sc.Text():
				default:
				}
			}
		}
	}()
	go func() { <-p.logged; cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.signal(syscall.SIGKILL); <-p.done })
	select {
	case p.ready = <-lines:
		p.url = readyLine.FindStringSubmatch(p.ready)[1]
		return p, nil
	case <-p.done:
		select {
		case p.ready = <-lines: // ready, then gone at once
			p.url = readyLine.FindStringSubmatch(p.ready)[1]
			return p, fmt.Errorf("fenceview exited just after it was ready")
		default:
			return p, fmt.Errorf("fenceview exited before it was ready")
		}
	}
}

func (p *process) signal(sig syscall.Signal) {
	if p.cmd.Process != nil {
		p.cmd.Process.Signal(sig)
	}
}

// serverBinary builds the real fenceview command once per test run.
func serverBinary(t *testing.T) string {
	t.Helper()
	return buildTool(t, "github.com/fenceview/fenceview/cmd/fenceview")
}

var (
	toolsMu sync.Mutex
	tools   = map[string]string{} // package path -> built binary
	toolDir string
)

// buildTool builds the main package pkg, with go build's flags, once per
// test run.
func buildTool(t *testing.T, pkg string, flags ...string) string {
	t.Helper()
	toolsMu.Lock()
	defer toolsMu.Unlock()
	key := strings.Join(append([]string{pkg}, flags...), " ")
	if bin, ok := tools[key]; ok {
		return bin
	}
	if toolDir == "" {
		dir, err := os.MkdirTemp("", "fenceview-tools-")
		if err != nil {
			t.Fatal(err)
		}
		toolDir = dir
	}
	bin := filepath.Join(toolDir, filepath.Base(pkg))
	if len(flags) > 0 {
		bin = fmt.Sprintf("%s-%d", bin, len(tools))
	}
	args := append(append([]string{"build", "-o", bin}, flags...), pkg)
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	tools[key] = bin
	return bin
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
