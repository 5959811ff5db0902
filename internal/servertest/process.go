package servertest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// ProcessOptions says how to run the fenceview command as a process.
type ProcessOptions struct {
	// Binary is the command to run; empty: Binary(t), the fenceview
	// command built from this tree.
	Binary string
	// DBPath is the SQLite file (--db); empty: a new file in t.TempDir().
	DBPath string
	// AdminToken, when set, is passed as --admin-token.
	AdminToken string
	// Args are further flags; a flag given again here wins (--addr too).
	Args []string
	// Env is added to the test's environment.
	Env []string
}

// Process is a fenceview server running as its own OS process.
type Process struct {
	URL        string // http://127.0.0.1:port
	Ready      string // the line it logged when it was ready
	DBPath     string
	AdminToken string
	// Done is closed once the process has exited and its log is read.
	Done <-chan struct{}

	t    testing.TB
	opts ProcessOptions
	cmd  *exec.Cmd
	log  LogBuffer
}

var readyLine = regexp.MustCompile(`url=(http://\S+)/`)

// StartProcess runs the fenceview command on 127.0.0.1:0 as opts say and
// returns once it logs its URL; a process that exits first fails the
// test. It is killed (SIGKILL) when the test ends, if it still runs.
func StartProcess(t testing.TB, opts ProcessOptions) *Process {
	t.Helper()
	p, err := LaunchProcess(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// LaunchProcess is StartProcess with an error, not a failed test, when the
// process exits before it is ready (or just after): the process is
// returned then too, exited.
func LaunchProcess(t testing.TB, opts ProcessOptions) (*Process, error) {
	t.Helper()
	if opts.Binary == "" {
		opts.Binary = Binary(t)
	}
	if opts.DBPath == "" {
		opts.DBPath = filepath.Join(t.TempDir(), "fenceview.db")
	}
	args := []string{"--addr", "127.0.0.1:0", "--db", opts.DBPath}
	if opts.AdminToken != "" {
		args = append(args, "--admin-token", opts.AdminToken)
	}
	cmd := exec.Command(opts.Binary, append(args, opts.Args...)...)
	if opts.Env != nil {
		cmd.Env = append(os.Environ(), opts.Env...)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done, logged := make(chan struct{}), make(chan struct{})
	p := &Process{DBPath: opts.DBPath, AdminToken: opts.AdminToken, Done: done, t: t, opts: opts, cmd: cmd}
	lines := make(chan string, 1)
	go func() {
		defer close(logged)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.log.Write(append(sc.Bytes(), '\n'))
			if readyLine.MatchString(sc.Text()) {
				select {
				case lines <- sc.Text():
				default:
				}
			}
		}
	}()
	go func() { <-logged; cmd.Wait(); close(done) }()
	t.Cleanup(func() { p.Signal(syscall.SIGKILL); <-done })
	select {
	case p.Ready = <-lines:
		p.URL = readyLine.FindStringSubmatch(p.Ready)[1]
		return p, nil
	case <-done:
		select {
		case p.Ready = <-lines: // ready, then gone at once
			p.URL = readyLine.FindStringSubmatch(p.Ready)[1]
			return p, fmt.Errorf("fenceview exited just after it was ready")
		default:
			return p, fmt.Errorf("fenceview exited before it was ready")
		}
	}
}

// Log is what the process has written to its standard error so far: all
// of it once Done is closed.
func (p *Process) Log() string { return p.log.String() }

// Signal sends sig to the process (a real signal: SIGKILL is a crash).
func (p *Process) Signal(sig syscall.Signal) {
	if p.cmd.Process != nil {
		p.cmd.Process.Signal(sig)
	}
}

// Kill kills the process (SIGKILL) and waits until it is gone.
func (p *Process) Kill() {
	p.Signal(syscall.SIGKILL)
	<-p.Done
}

// ExitCode is the process's exit code once Done is closed (-1 when a
// signal ended it).
func (p *Process) ExitCode() int { return p.cmd.ProcessState.ExitCode() }

// Restart kills the process, if it still runs, and starts the same
// command again on the same database; the restarted process answers on a
// new port.
func (p *Process) Restart() *Process {
	p.t.Helper()
	p.Kill()
	return StartProcess(p.t, p.opts)
}

// Binary builds the fenceview command from this tree, once per test run.
func Binary(t testing.TB) string {
	t.Helper()
	return Build(t, "github.com/fenceview/fenceview/cmd/fenceview")
}

var (
	buildsMu sync.Mutex
	builds   = map[string]string{} // package and flags -> built binary
	buildDir string
)

// Build builds the main package pkg with go build's flags, once per test
// run, and returns the binary; RemoveBuilds removes them.
func Build(t testing.TB, pkg string, flags ...string) string {
	t.Helper()
	buildsMu.Lock()
	defer buildsMu.Unlock()
	key := strings.Join(append([]string{pkg}, flags...), " ")
	if bin, ok := builds[key]; ok {
		return bin
	}
	if buildDir == "" {
		dir, err := os.MkdirTemp("", "fenceview-builds-")
		if err != nil {
			t.Fatal(err)
		}
		buildDir = dir
	}
	bin := filepath.Join(buildDir, filepath.Base(pkg))
	if len(flags) > 0 {
		bin = fmt.Sprintf("%s-%d", bin, len(builds))
	}
	args := append(append([]string{"build", "-o", bin}, flags...), pkg)
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	builds[key] = bin
	return bin
}

// Main runs a package's tests and then removes what Build built; a
// package whose tests build binaries calls it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	buildsMu.Lock()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	buildsMu.Unlock()
	os.Exit(code)
}
