package freshclone

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fenceview/fenceview/internal/docblocks"
	"github.com/fenceview/fenceview/internal/loopport"
	"github.com/fenceview/fenceview/internal/servertest"
)

// hangGuard bounds a step that should take seconds; it is not a wait.
const hangGuard = 2 * time.Minute

// needed skips a test whose program is not installed, or fails it under CI
// (.ci/run installs it).
func needed(t *testing.T, program string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the README's commands: builds and starts real processes")
	}
	if _, err := exec.LookPath(program); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed (CI must run the README's commands: .ci/run installs it)", program)
		}
		t.Skipf("%s is not installed: skipped", program)
	}
}

// shBlock returns the lines of the first ```sh block after the heading of
// README.md.
func shBlock(t *testing.T, readme, heading string) []string {
	t.Helper()
	code, err := docblocks.After(readme, heading, "sh")
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	return strings.Split(code, "\n")
}

// step is one command of a README block and the output lines the README
// shows under it (its "# ..." lines right after it; "#  " continues the
// line before).
type step struct {
	command string
	want    []string
}

func steps(lines []string) []step {
	var out []step
	for _, line := range lines {
		switch {
		case strings.TrimSpace(line) == "":
			out = append(out, step{}) // a blank line ends the output shown
		case strings.HasPrefix(line, "#"):
			if len(out) == 0 || out[len(out)-1].command == "" {
				continue // narrative before a command
			}
			last := &out[len(out)-1]
			if strings.HasPrefix(line, "#  ") && len(last.want) > 0 {
				last.want[len(last.want)-1] += strings.TrimPrefix(line, "#  ")
			} else {
				last.want = append(last.want, strings.TrimPrefix(line, "# "))
			}
		default:
			out = append(out, step{command: line})
		}
	}
	var cmds []step
	for _, s := range out {
		if s.command != "" {
			cmds = append(cmds, s)
		}
	}
	return cmds
}

// shown is the README's example output line as a pattern: "..." and "…"
// stand for anything, and the example's resource id for any run's.
func shown(line string) *regexp.Regexp {
	p := regexp.QuoteMeta(line)
	p = strings.NewReplacer(`\.\.\.`, `.*`, "…", `.*`).Replace(p)
	p = regexp.MustCompile(`order:[0-9]+`).ReplaceAllString(p, `order:[0-9]+`)
	return regexp.MustCompile("^" + p + "$")
}

var readyURL = regexp.MustCompile(`url=(http://\S+)/`)

// The README's quick start, as written: its run command starts the server
// (on a free port and a temporary database: the only words added), and the
// curl story's requests answer as the README shows them.
func TestReadmeQuickStart(t *testing.T) {
	needed(t, "curl")
	root := repoRoot(t)
	readme := string(must(os.ReadFile(filepath.Join(root, "README.md"))))
	quick := shBlock(t, readme, "## Quick start")
	run, _, _ := strings.Cut(quick[0], "#")
	run = strings.TrimSpace(run)
	if run != "go run ./cmd/fenceview" || !strings.HasPrefix(quick[1], "go test ./...") {
		t.Fatalf("the quick start no longer begins with the run and test commands: %q", quick)
	}
	cmd := exec.Command("bash", "-c", run+` --addr 127.0.0.1:0 --db "$0"`, filepath.Join(t.TempDir(), "fenceview.db"))
	cmd.Dir = root
	_, base := startGroup(t, cmd, func(line string) string {
		if m := readyURL.FindStringSubmatch(line); m != nil {
			return m[1]
		}
		return ""
	})
	port := base[strings.LastIndexByte(base, ':')+1:]

	story := steps(shBlock(t, readme, "### The paused client, with curl"))
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	for i, s := range story {
		fmt.Fprintf(&script, "%s\necho; echo '@@step %d'\n", strings.ReplaceAll(s.command, "localhost:8080", "localhost:"+port), i)
	}
	out, err := exec.Command("bash", "-c", script.String()).CombinedOutput()
	if err != nil {
		t.Fatalf("the curl story failed: %v\n%s", err, out)
	}
	sections := regexp.MustCompile(`(?m)^@@step \d+$`).Split(string(out), -1)
	checked := 0
	for i, s := range story {
		lines := strings.Split(strings.ReplaceAll(sections[i], "\r", ""), "\n")
		for _, want := range s.want {
			re := shown(want)
			found := false
			for _, l := range lines {
				found = found || re.MatchString(strings.TrimSpace(l))
			}
			if !found {
				t.Errorf("%s\n  answered:\n%s\n  README shows: %s", s.command, sections[i], want)
			}
			checked++
		}
	}
	if checked < 5 {
		t.Fatalf("checked %d lines of the story's output: the README's example output is gone or unread", checked)
	}
}

// The README's cluster quick start with Go alone: scripts/cluster.sh
// starts etcd and three nodes (on free ports, through its environment),
// a lock is taken through a follower or the leader, and SIGTERM stops
// everything.
func TestReadmeClusterQuickStart(t *testing.T) {
	needed(t, "curl")
	root := repoRoot(t)
	readme := string(must(os.ReadFile(filepath.Join(root, "README.md"))))
	if !strings.Contains(readme, "`scripts/cluster.sh`") || !strings.Contains(readme, "go run ./internal/devetcd") {
		t.Fatal("the README's cluster section no longer names scripts/cluster.sh and its plain commands")
	}
	ports := freePorts(t, 5)
	nodes := []string{ports[2], ports[3], ports[4]}
	cmd := exec.Command("scripts/cluster.sh")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "FENCEVIEW_CLUSTER_DIR="+t.TempDir(),
		"FENCEVIEW_CLUSTER_ETCD="+ports[0], "FENCEVIEW_CLUSTER_ETCD_PEER="+ports[1],
		"FENCEVIEW_CLUSTER_NODES="+strings.Join(nodes, " "))
	script, _ := startGroup(t, cmd, func(line string) string {
		if strings.HasPrefix(line, "cluster: 3 nodes up") {
			return line
		}
		return ""
	})
	deadline := time.Now().Add(hangGuard)
	for {
		res, err := http.Post("http://"+nodes[1]+"/v1/locks/jobs%2F1/acquire", "application/json", strings.NewReader(`{"holder":"a"}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == 200 && bytes.Contains(body, []byte(`"token":1`)) {
			break
		}
		// Until a leader is elected a node answers 503 with Retry-After.
		if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" || time.Now().After(deadline) {
			t.Fatalf("acquire through a node: %d %s", res.StatusCode, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop(t, script)
	for _, addr := range append(nodes, ports[0]) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			t.Errorf("%s still answers after the script was stopped", addr)
		}
	}
}

// startGroup starts cmd through servertest.StartCommand (in a process
// group of its own, killed when the test ends) and returns once a line of
// its output gives ready something, failing if it exits first.
func startGroup(t *testing.T, cmd *exec.Cmd, ready func(string) string) (*servertest.Command, string) {
	t.Helper()
	c, v, err := servertest.StartCommand(t, cmd, ready)
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, c.Log())
	}
	return c, v
}

// stop sends SIGTERM to the command (not its group: a script stops its
// own processes) and waits for it to exit.
func stop(t *testing.T, c *servertest.Command) {
	t.Helper()
	c.Signal(syscall.SIGTERM)
	select {
	case <-c.Done:
	case <-time.After(hangGuard):
		t.Fatalf("%s did not stop on SIGTERM", c.Cmd)
	}
}

// freePorts are n loopback addresses free a moment ago, below the
// ephemeral range so no test's outgoing connection takes one meanwhile.
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	out, err := loopport.Picks(n)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestGoInstallFromClone follows the README's "Use it from Go" words into a
// fresh module: the replace directive to this clone, the driver, tidy, and
// a program using the client and a guard that builds and runs.
func TestGoInstallFromClone(t *testing.T) {
	needed(t, "go")
	root := repoRoot(t)
	readme := string(must(os.ReadFile(filepath.Join(root, "README.md"))))
	var lines []string
	for _, line := range shBlock(t, readme, "## Use it from Go") {
		if strings.TrimSpace(line) != "" {
			lines = append(lines, line)
		}
	}
	want := []string{
		"cd <your-project>",
		"go mod edit -require=github.com/fenceview/fenceview@v0.0.0 -replace=github.com/fenceview/fenceview=<path-to-clone>",
		"go get github.com/mattn/go-sqlite3",
		"go mod tidy",
	}
	if len(lines) != len(want) {
		t.Fatalf("the README's Go install block is %q; this test follows %q", lines, want)
	}
	project := t.TempDir()
	gomod := "module example.com/tryfenceview\n\ngo 1.26\n"
	if err := os.WriteFile(filepath.Join(project, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	const program = `package main

import (
	"fmt"

	_ "github.com/mattn/go-sqlite3"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/guard"
)

func main() {
	g := guard.New()
	d, _ := g.Check("inventory:42", 7)
	_, err := client.New(client.Config{URL: "http://127.0.0.1:8080"})
	fmt.Println(d.Accepted, err == nil)
}
`
	if err := os.WriteFile(filepath.Join(project, "main.go"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, line := range lines {
		if !strings.HasPrefix(line, want[i]) {
			t.Fatalf("README line %q, want it to start %q", line, want[i])
		}
		if line == "cd <your-project>" {
			continue
		}
		line, _, _ = strings.Cut(line, "#") // the comment beside the driver
		args := strings.Fields(strings.ReplaceAll(line, "<path-to-clone>", root))
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = project
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
	}
	cmd := exec.Command("go", "run", ".")
	cmd.Dir = project
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "true true" {
		t.Fatalf("go run in the new module: %v\n%s", err, out)
	}
}
