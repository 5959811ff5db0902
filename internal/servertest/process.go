package servertest

import (
	"bufio"
	"fmt"
	"io"
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
	*Command
	URL        string // http://127.0.0.1:port
	Ready      string // the line it logged when it was ready
	DBPath     string
	AdminToken string

	t    testing.TB
	opts ProcessOptions
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
	c, ready, err := StartCommand(t, cmd, func(line string) string {
		if readyLine.MatchString(line) {
			return line
		}
		return ""
	})
	p := &Process{Command: c, Ready: ready, DBPath: opts.DBPath, AdminToken: opts.AdminToken, t: t, opts: opts}
	if ready != "" {
		p.URL = readyLine.FindStringSubmatch(ready)[1]
	}
	return p, err
}

// Restart kills the process, if it still runs, and starts the same
// command again on the same database; the restarted process answers on a
// new port.
func (p *Process) Restart() *Process {
	p.t.Helper()
	p.Kill()
	return StartProcess(p.t, p.opts)
}

// Command is a program a test runs in a process group of its own.
type Command struct {
	Cmd *exec.Cmd
	// Done is closed once the command has exited and its output is read.
	Done <-chan struct{}
	log  LogBuffer
}

// StartCommand starts cmd in a process group of its own, killed (the
// whole group: `go run` and scripts have children) when the test ends, and
// reads its output, standard output and error together. It returns once
// ready gives a line of that output a value other than "", with that
// value; or with an error when the command exits first (with the value
// too if the command was ready and then gone at once).
func StartCommand(t testing.TB, cmd *exec.Cmd, ready func(line string) string) (*Command, string, error) {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done, read := make(chan struct{}), make(chan struct{})
	c := &Command{Cmd: cmd, Done: done}
	go func() { cmd.Wait(); pw.Close(); <-read; close(done) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	found := make(chan string, 1)
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			c.log.Write(append(sc.Bytes(), '\n'))
			if v := ready(sc.Text()); v != "" {
				select {
				case found <- v:
				default:
				}
			}
		}
		io.Copy(io.Discard, pr) // a line too long for the scanner must not block the command
	}()
	select {
	case v := <-found:
		return c, v, nil
	case <-done:
		select {
		case v := <-found: // ready, then gone at once
			return c, v, fmt.Errorf("%s exited just after it was ready", filepath.Base(cmd.Path))
		default:
			return c, "", fmt.Errorf("%s exited before it was ready", filepath.Base(cmd.Path))
		}
	}
}

// Log is what the command has written so far: all of it once Done is
// closed.
func (c *Command) Log() string { return c.log.String() }

// Signal sends sig to the command (a real signal: SIGKILL is a crash).
func (c *Command) Signal(sig syscall.Signal) {
	if c.Cmd.Process != nil {
		c.Cmd.Process.Signal(sig)
	}
}

// Kill kills the command (SIGKILL) and waits until it is gone.
func (c *Command) Kill() {
	c.Signal(syscall.SIGKILL)
	<-c.Done
}

// ExitCode is the command's exit code once Done is closed (-1 when a
// signal ended it).
func (c *Command) ExitCode() int { return c.Cmd.ProcessState.ExitCode() }

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
