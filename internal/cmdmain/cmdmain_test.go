package cmdmain_test

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/fenceview/fenceview/internal/cmdmain"
)

const childEnv = "CMDMAIN_TEST_CHILD"

// TestMain runs cmdmain.Main in the child processes the tests start, with
// the run function the child's mode names.
func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		cmdmain.Main("child", func(ctx context.Context, args []string, stdout io.Writer) error {
			switch mode {
			case "help":
				fs := flag.NewFlagSet("child", flag.ContinueOnError)
				fs.SetOutput(io.Discard)
				return cmdmain.Parse(fs, []string{"-h"})
			case "usage":
				return cmdmain.Usage(errors.New("-n wants a number"))
			case "fail":
				return errors.New("the run failed")
			case "signal":
				fmt.Fprintln(stdout, "ready")
				<-ctx.Done()
				fmt.Fprintln(stdout, "cleaned up after", ctx.Err())
			}
			return nil
		})
		os.Exit(0) // Main returned: the run succeeded
	}
	os.Exit(m.Run())
}

func child(t *testing.T, mode string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	return cmd
}

func TestExitCodes(t *testing.T) {
	for _, c := range []struct {
		mode   string
		code   int
		stderr string
	}{
		{"ok", 0, ""},
		{"help", 0, ""},
		{"usage", 2, "child: -n wants a number\n"},
		{"fail", 1, "child: the run failed\n"},
	} {
		cmd := child(t, c.mode)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code || stderr.String() != c.stderr {
			t.Errorf("%s: exit %d, stderr %q; want %d, %q", c.mode, code, stderr.String(), c.code, c.stderr)
		}
	}
}

// SIGTERM cancels the run's context instead of killing the process, so
// the run's deferred clean-ups happen and it ends as it chooses.
func TestSignalCancelsTheRun(t *testing.T) {
	cmd := child(t, "signal")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	if line, err := r.ReadString('\n'); line != "ready\n" {
		cmd.Process.Kill()
		t.Fatalf("first line %q, %v", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(r)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v", err)
	}
	if string(rest) != "cleaned up after context canceled\n" {
		t.Fatalf("after SIGTERM the run printed %q", rest)
	}
}

// A flag the command does not know, a bad value and a stray argument are
// usage errors (exit 2); -h is still flag.ErrHelp (exit 0, see
// TestExitCodes); good flags parse.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		args  []string
		usage bool
	}{
		{[]string{"-n", "3"}, false},
		{[]string{"-m", "3"}, true},
		{[]string{"-n", "three"}, true},
		{[]string{"-n", "3", "extra"}, true},
	} {
		fs := flag.NewFlagSet("child", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		n := fs.Int("n", 0, "a number")
		err := cmdmain.Parse(fs, c.args)
		if got := errors.As(err, new(cmdmain.UsageError)); got != c.usage || (!c.usage && (err != nil || *n != 3)) {
			t.Errorf("Parse(%q) = %v, n %d", c.args, err, *n)
		}
	}
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if err := cmdmain.Parse(fs, []string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("Parse(-h) = %v, want flag.ErrHelp", err)
	}
}
