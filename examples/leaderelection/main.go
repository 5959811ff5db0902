// Command leaderelection plays the story an election's term is a fencing
// token for, with a real pause: a leader process frozen with SIGSTOP.
//
//  1. Candidate A (its own process) is elected leader of "db-primary" and
//     writes the row that says which node is primary, fenced by its term.
//  2. A is frozen (SIGSTOP) past its lease; its watchdog stops with it.
//  3. The lease runs out on the server; candidate B is elected with a
//     larger term and writes the row.
//  4. A is resumed (SIGCONT) and writes at once, with the term it
//     remembers, before its watchdog can tell it anything: the row refuses
//     it, because B's term is already recorded there.
//
// Run it:
//
//	go run ./examples/leaderelection            # starts a server in-process
//	go run ./examples/leaderelection -server http://127.0.0.1:8080
//
// Run with -role candidate it is candidate A: it campaigns, prints one JSON
// line {"event":"elected","term":N}, then obeys commands on stdin, one
// JSON line of answer each: "write <value>" (with the term it was elected
// with, whatever happened since) and "wait-lost" (until its client says
// the leadership is gone).
package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/examples/internal/sqlitedb"
	"github.com/fenceview/fenceview/examples/internal/story"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/sqlguard"
	"github.com/fenceview/fenceview/internal/cmdmain"
)

func main() {
	cmdmain.Main("leaderelection", func(ctx context.Context, args []string, stdout io.Writer) error {
		return run(ctx, args, os.Stdin, stdout)
	})
}

type flags struct {
	role, db, election, candidate string
	server                        *story.Server
	lease                         time.Duration
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	cmd := story.NewCommand("leaderelection")
	f := flags{server: &cmd.Server}
	cmd.StringVar(&f.role, "role", "story", "story (the whole story) or candidate (candidate A, driven by the story)")
	cmd.StringVar(&f.db, "db", "", "SQLite file holding the row (default: a temporary file)")
	cmd.StringVar(&f.election, "election", "db-primary", "the election's name")
	cmd.StringVar(&f.candidate, "candidate", "node-a", "candidate id (-role candidate)")
	cmd.DurationVar(&f.lease, "lease", 500*time.Millisecond, "candidate A's lease; A is frozen longer than this")
	if err := cmd.Parse(args); err != nil {
		return err
	}
	switch f.role {
	case "candidate":
		return candidate(ctx, f, stdin, stdout)
	case "story":
		return tell(ctx, f, stdout)
	}
	return cmdmain.Usage(fmt.Errorf("-role %q: want story or candidate", f.role))
}

// reply is one line candidate A prints.
type reply struct {
	Event    string `json:"event"`
	Term     int64  `json:"term,omitempty"`
	Accepted bool   `json:"accepted,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Required int64  `json:"required,omitempty"`
	Cause    string `json:"cause,omitempty"`
	Error    string `json:"error,omitempty"`
}

// primary is the guarded row: which node is the primary, with the term of
// the leader that wrote it as its high-water mark.
var primary = sqlitedb.Table("cluster_primary", "id")

// candidate is A: elected, then a follower of commands.
func candidate(ctx context.Context, f flags, stdin io.Reader, stdout io.Writer) error {
	db, closeDB, err := openDB(ctx, &f.db, false)
	if err != nil {
		return err
	}
	defer closeDB()
	c, err := client.New(client.Config{URL: f.server.URL, Key: f.server.Key, Holder: f.candidate, Lease: f.lease})
	if err != nil {
		return err
	}
	defer c.Close()
	e := c.Election(f.election)
	term, err := e.Campaign(ctx, f.candidate)
	if err != nil {
		return err
	}
	out := json.NewEncoder(stdout)
	out.Encode(reply{Event: "elected", Term: term})
	in := bufio.NewScanner(stdin)
	for in.Scan() {
		cmd, arg, _ := strings.Cut(in.Text(), " ")
		switch cmd {
		case "write":
			// The term it was elected with: a leader frozen between
			// checking its leadership and writing does exactly this.
			d, err := primary.Update(ctx, db, 1, term, sqlguard.Set("node", arg))
			r := reply{Event: "write", Accepted: d.Accepted, Reason: d.Reason, Required: d.Required}
			if err != nil {
				r.Error = err.Error()
			}
			out.Encode(r)
		case "wait-lost":
			<-e.Done()
			out.Encode(reply{Event: "lost", Cause: context.Cause(e.Context()).Error()})
		default:
			out.Encode(reply{Event: "error", Error: "unknown command " + cmd})
		}
	}
	return in.Err()
}

// tell runs the server (unless given), candidate A as a child process,
// and candidate B here, and checks the end state.
func tell(ctx context.Context, f flags, stdout io.Writer) error {
	stop, err := f.server.Start(ctx)
	if err != nil {
		return err
	}
	defer stop()
	db, closeDB, err := openDB(ctx, &f.db, true)
	if err != nil {
		return err
	}
	defer closeDB()

	a, err := startCandidate(ctx, f)
	if err != nil {
		return err
	}
	defer a.stop()
	elected, err := a.read("elected")
	if err != nil {
		return err
	}
	termA := elected.Term
	fmt.Fprintf(stdout, "A (pid %d) is elected leader of %s, term %d\n", a.cmd.Process.Pid, f.election, termA)
	if w, err := a.ask("write node-a", "write"); err != nil || !w.Accepted {
		return fmt.Errorf("A's first write: %+v, %v", w, err)
	}
	fmt.Fprintf(stdout, "A writes primary = node-a with term %d: accepted\n", termA)

	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "A is frozen (SIGSTOP) past its lease of %v\n", f.lease)

	// B campaigns: the server makes it wait until A's lease runs out.
	c, err := client.New(client.Config{URL: f.server.URL, Key: f.server.Key, Holder: "node-b"})
	if err != nil {
		return err
	}
	defer c.Close()
	b := c.Election(f.election)
	termB, err := b.Campaign(ctx, "node-b")
	if err != nil {
		return fmt.Errorf("B: %w", err)
	}
	fmt.Fprintf(stdout, "A's lease ran out; B is elected, term %d\n", termB)
	d, err := primary.Update(ctx, db, 1, termB, sqlguard.Set("node", "node-b"))
	if err != nil || !d.Accepted {
		return fmt.Errorf("B's write: %+v, %v", d, err)
	}
	fmt.Fprintf(stdout, "B writes primary = node-b with term %d: accepted\n", termB)

	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return err
	}
	w, err := a.ask("write node-a", "write")
	if err != nil {
		return err
	}
	if w.Accepted || w.Error != "" {
		return fmt.Errorf("A's write after the pause was not refused: %+v", w)
	}
	fmt.Fprintf(stdout, "A resumes (SIGCONT) and writes with term %d: refused, %s, required %d\n", termA, w.Reason, w.Required)
	lost, err := a.ask("wait-lost", "lost")
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "A's client then says: %s\n", lost.Cause)

	var node string
	var mark int64
	if err := db.QueryRowContext(ctx, `SELECT node, fence_token FROM cluster_primary WHERE id = 1`).Scan(&node, &mark); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "primary: %s, fence_token %d\n", node, mark)
	leader, err := b.Leader(ctx)
	if err != nil {
		return err
	}
	if node != "node-b" || mark != termB || termB <= termA || w.Reason != guard.ReasonStale || w.Required != termB || leader.Candidate != "node-b" {
		return fmt.Errorf("unexpected end state: primary %s mark %d, terms %d then %d, refusal %+v, leader %+v", node, mark, termA, termB, w, leader)
	}
	return b.Resign(ctx)
}

// child is candidate A's process.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

// startCandidate runs this program again as candidate A (in tests, the
// test binary, whose TestMain runs main when CHILD_ENV is set).
func startCandidate(ctx context.Context, f flags) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, "-role", "candidate", "-server", f.server.URL, "-db", f.db,
		"-election", f.election, "-candidate", "node-a", "-lease", f.lease.String())
	cmd.Env = append(os.Environ(), childEnv+"=1", "FENCEVIEW_KEY="+f.server.Key)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &child{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}, nil
}

// childEnv marks a process started as candidate A.
const childEnv = "LEADERELECTION_CHILD"

func (c *child) read(event string) (reply, error) {
	if !c.out.Scan() {
		return reply{}, fmt.Errorf("candidate A exited before %q: %v", event, c.out.Err())
	}
	var r reply
	if err := json.Unmarshal(c.out.Bytes(), &r); err != nil {
		return reply{}, fmt.Errorf("candidate A said %q: %w", c.out.Text(), err)
	}
	if r.Event != event {
		return r, fmt.Errorf("candidate A said %+v, want %q", r, event)
	}
	return r, nil
}

func (c *child) ask(command, event string) (reply, error) {
	if _, err := io.WriteString(c.stdin, command+"\n"); err != nil {
		return reply{}, err
	}
	return c.read(event)
}

// stop resumes A if frozen, ends its input and waits for it; it exits when
// its stdin closes.
func (c *child) stop() {
	c.cmd.Process.Signal(syscall.SIGCONT)
	c.stdin.Close()
	if err := c.cmd.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "leaderelection: candidate A:", err)
	}
}

// openDB opens the row's file (see sqlitedb.Open); the story (create)
// makes the row, with no primary yet.
func openDB(ctx context.Context, path *string, create bool) (*sql.DB, func(), error) {
	schema := ""
	if create {
		schema = `
			CREATE TABLE IF NOT EXISTS cluster_primary (
				id          INTEGER PRIMARY KEY,
				node        TEXT   NOT NULL,
				fence_token BIGINT NOT NULL DEFAULT 0
			);
			INSERT OR REPLACE INTO cluster_primary (id, node, fence_token) VALUES (1, '', 0);`
	}
	return sqlitedb.Open(ctx, path, schema)
}
