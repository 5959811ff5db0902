// Package dbtest starts real database servers (Redis, MariaDB, PostgreSQL)
// and an S3-compatible store (versitygw) for tests: each on 127.0.0.1 and
// a free port, with its data in a new temporary directory, stopped by its
// PID when the test ends.
//
// The servers are the ones installed on the machine (.ci/run installs
// Debian's redis-server, mariadb-server and postgresql, and versitygw
// with go install). When one is
// missing the test is skipped, except under CI (the CI environment variable
// set), where a missing server fails the test: a green CI run must have
// exercised every server. With -short, every test that needs a server is
// skipped (the race run uses -short; the full run covers the servers).
//
// Run as root (as CI does), the servers run as an unprivileged user (the
// server's own package user, else nobody): PostgreSQL and MariaDB refuse
// to run as root, and none of them needs it.
//
//	srv := dbtest.Redis(t)
//	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
//
// AssertPrivate checks the files of a database's directory (fenceview's
// own SQLite file among them) are its owner's alone.
package dbtest

import (
	"bufio"
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/fenceview/fenceview/internal/loopport"
)

// Server is a running database server.
type Server struct {
	// Addr is host:port on 127.0.0.1.
	Addr string
	// Dir is the server's temporary directory (data, socket, log).
	Dir string
	// Version is the server's version line, for test logs.
	Version string

	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	log  *lockedBuffer
}

// Host and Port split Addr.
func (s *Server) Host() string { h, _, _ := net.SplitHostPort(s.Addr); return h }

// Port is the server's TCP port.
func (s *Server) Port() string { _, p, _ := net.SplitHostPort(s.Addr); return p }

// PID is the server process's id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// startTimeout bounds a server's start (MariaDB's first start creates its
// InnoDB files; PostgreSQL's initdb writes a cluster). It is a bound on a
// failure, not a wait: a healthy server is used the moment it says it is
// ready.
const startTimeout = 2 * time.Minute

// missing skips, or under CI fails, a test whose server is not installed.
func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (CI must exercise every server: .ci/run installs it)", msg)
	}
	t.Skipf("%s: skipped (install it, or run .ci/run, to run this test)", msg)
}

func short(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("%s test skipped in -short mode", what)
	}
}

// find returns the path of the first of names found on PATH or in dirs.
func find(names []string, dirs ...string) string {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	for _, d := range dirs {
		for _, n := range names {
			p := filepath.Join(d, n)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				return p
			}
		}
	}
	return ""
}

// account is the user a server runs as: nil when the test is not root.
type account struct {
	name     string
	uid, gid int
}

// unprivileged returns the user to run a server as when the test runs as
// root: the first of names that exists, else nobody.
func unprivileged(t testing.TB, names ...string) *account {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	for _, n := range append(names, "nobody") {
		u, err := user.Lookup(n)
		if err != nil {
			continue
		}
		uid, err1 := strconv.Atoi(u.Uid)
		gid, err2 := strconv.Atoi(u.Gid)
		if err1 != nil || err2 != nil || uid == 0 {
			continue
		}
		return &account{name: n, uid: uid, gid: gid}
	}
	t.Fatalf("running as root and no unprivileged user (%v, nobody) to run the server as", names)
	return nil
}

func (a *account) attr() *syscall.SysProcAttr {
	// Setpgid: a signal to the test's process group (Ctrl-C) should not
	// race the orderly stop below.
	attr := &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(attr)
	if a != nil {
		attr.Credential = &syscall.Credential{Uid: uint32(a.uid), Gid: uint32(a.gid), NoSetGroups: true}
	}
	return attr
}

// tempDir makes the server's directory under the system temp dir (not
// t.TempDir, whose parent is private to root) and hands it to acct.
func tempDir(t testing.TB, name string, acct *account) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "fenceview-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if acct != nil {
		if err := os.Chown(dir, acct.uid, acct.gid); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// run runs a setup command (initdb) to completion as acct.
func run(t testing.TB, acct *account, dir string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = acct.attr()
	cmd.Env = append(os.Environ(), "HOME="+dir, "LC_ALL=C")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago,
// below the ephemeral range (loopport). Another test may still take it
// before the server binds it; start retries with a new port when the server
// says its address is in use.
func freePort(t testing.TB) int {
	t.Helper()
	addr, err := loopport.Pick()
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(port)
	return n
}

// spec describes how to start one server and how to know it is ready.
type spec struct {
	what  string // "redis", for messages
	bin   string
	args  func(port int) []string
	ready string // a line of its log that means "accepting connections"
	acct  *account
	dir   string
}

// start runs the server until it logs its ready line, retrying on a port
// taken in between, and stops it (SIGTERM to its PID, then SIGKILL) when
// the test ends.
func start(t testing.TB, s spec) *Server {
	t.Helper()
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		srv, err := spawn(s, port)
		if err == nil {
			t.Cleanup(func() { srv.stop(t) })
			return srv
		}
		if attempt < 3 && errors.Is(err, errAddrInUse) {
			continue
		}
		t.Fatalf("start %s: %v", s.what, err)
	}
}

var errAddrInUse = errors.New("address in use")

func spawn(s spec, port int) (*Server, error) {
	cmd := exec.Command(s.bin, s.args(port)...)
	cmd.Dir = s.dir
	cmd.SysProcAttr = s.acct.attr()
	cmd.Env = append(os.Environ(), "HOME="+s.dir, "LC_ALL=C")
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, err
	}
	pw.Close()
	srv := &Server{
		Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Dir:  s.dir,
		cmd:  cmd,
		done: make(chan struct{}),
		log:  &lockedBuffer{},
	}
	ready := make(chan struct{})
	go func() {
		// Read the log to its end (the pipe closes when the server exits),
		// so the server never blocks on a full pipe.
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			srv.log.WriteLine(line)
			if !signalled && strings.Contains(line, s.ready) {
				signalled = true
				close(ready)
			}
		}
		pr.Close()
	}()
	go func() {
		cmd.Wait()
		close(srv.done)
	}()
	select {
	case <-ready:
		return srv, nil
	case <-srv.done:
		log := srv.log.String()
		if strings.Contains(log, "in use") {
			return nil, fmt.Errorf("%w: port %d\n%s", errAddrInUse, port, log)
		}
		return nil, fmt.Errorf("%s exited before it was ready (%v):\n%s", s.bin, cmd.ProcessState, log)
	case <-time.After(startTimeout):
		srv.kill()
		return nil, fmt.Errorf("%s not ready after %v:\n%s", s.bin, startTimeout, srv.log.String())
	}
}

// stop ends the server by its PID: SIGTERM (an orderly shutdown), then
// SIGKILL if it is still running after a while.
func (s *Server) stop(t testing.TB) {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Logf("server %d ignored SIGTERM for 30s; killing it", s.PID())
		s.kill()
	}
	if t.Failed() {
		t.Logf("log of %s (pid %d):\n%s", filepath.Base(s.cmd.Path), s.PID(), s.log.String())
	}
}

func (s *Server) kill() {
	_ = s.cmd.Process.Kill()
	<-s.done
}

// Log returns what the server has logged so far.
func (s *Server) Log() string { return s.log.String() }

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) WriteLine(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() < 1<<20 { // enough to diagnose a failed start
		l.b.WriteString(s)
		l.b.WriteByte('\n')
	}
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// versionOf returns the first line `bin --version` prints.
func versionOf(bin string) string {
	out, _ := exec.Command(bin, "--version").Output()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

// Redis starts redis-server (or valkey-server): no persistence, no
// password, bound to 127.0.0.1. extra are more server arguments
// ("--cluster-enabled", "yes").
func Redis(t testing.TB, extra ...string) *Server {
	t.Helper()
	short(t, "Redis")
	bin := find([]string{"redis-server", "valkey-server"}, "/usr/bin", "/usr/local/bin", "/usr/sbin")
	if bin == "" {
		missing(t, "redis-server not found")
	}
	acct := unprivileged(t, "redis", "valkey")
	dir := tempDir(t, "redis", acct)
	srv := start(t, spec{
		what: "redis", bin: bin, acct: acct, dir: dir,
		args: func(port int) []string {
			return append([]string{
				"--bind", "127.0.0.1", "--port", strconv.Itoa(port),
				"--dir", dir, "--save", "", "--appendonly", "no",
				"--daemonize", "no", "--logfile", "",
			}, extra...)
		},
		ready: "Ready to accept connections",
	})
	srv.Version = versionOf(bin)
	return srv
}

// MariaDB starts mariadbd (or mysqld from MariaDB) with an empty data
// directory and --skip-grant-tables: any user name connects, without a
// password, over TCP on 127.0.0.1. DSN gives go-sql-driver/mysql's form.
// Each of databases is created, empty.
func MariaDB(t testing.TB, databases ...string) *Server {
	t.Helper()
	short(t, "MariaDB")
	bin := find([]string{"mariadbd", "mysqld"}, "/usr/sbin", "/usr/local/sbin", "/usr/bin")
	if bin == "" {
		missing(t, "mariadbd not found")
	}
	acct := unprivileged(t, "mysql")
	dir := tempDir(t, "mariadb", acct)
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if acct != nil {
		if err := os.Chown(data, acct.uid, acct.gid); err != nil {
			t.Fatal(err)
		}
	}
	srv := start(t, spec{
		what: "mariadb", bin: bin, acct: acct, dir: dir,
		args: func(port int) []string {
			// --no-defaults: the machine's my.cnf (a system service's
			// paths and user) must not leak into the test server.
			return []string{
				"--no-defaults", "--datadir=" + data,
				"--socket=" + filepath.Join(dir, "mysqld.sock"),
				"--pid-file=" + filepath.Join(dir, "mysqld.pid"),
				"--bind-address=127.0.0.1", "--port=" + strconv.Itoa(port),
				"--skip-grant-tables", "--skip-log-bin", "--skip-name-resolve",
				"--innodb-buffer-pool-size=16M", "--innodb-log-file-size=16M",
				"--innodb-flush-log-at-trx-commit=2",
			}
		},
		ready: "ready for connections",
	})
	srv.Version = versionOf(bin)
	if len(databases) > 0 {
		createDatabases(t, srv, databases)
	}
	return srv
}

func createDatabases(t testing.TB, srv *Server, names []string) {
	t.Helper()
	db, err := sql.Open("mysql", srv.MySQLDSN("", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, name := range names {
		if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
			t.Fatal(err)
		}
	}
}

// MySQLDSN returns a go-sql-driver/mysql DSN for database db (one MariaDB
// created, or the caller) with extra parameters appended ("clientFoundRows=true").
func (s *Server) MySQLDSN(db, params string) string {
	dsn := "root@tcp(" + s.Addr + ")/" + db
	if params != "" {
		dsn += "?" + params
	}
	return dsn
}

// PostgreSQL runs initdb into a temporary directory and starts postgres on
// it (trust authentication, user postgres, fsync off). Debian keeps the
// binaries off PATH, in /usr/lib/postgresql/<version>/bin; the newest there
// is used when PATH has none.
func PostgreSQL(t testing.TB) *Server {
	t.Helper()
	short(t, "PostgreSQL")
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	initdb := find([]string{"initdb"}, dirs...)
	postgres := ""
	if initdb != "" {
		// The server of the same installation as initdb (PATH may hold a
		// symlink to it).
		if p := filepath.Join(filepath.Dir(mustEval(initdb)), "postgres"); fileExists(p) {
			postgres = p
		}
	}
	if initdb == "" || postgres == "" {
		missing(t, "PostgreSQL (initdb, postgres) not found")
	}
	acct := unprivileged(t, "postgres")
	dir := tempDir(t, "postgres", acct)
	data := filepath.Join(dir, "data")
	run(t, acct, dir, initdb, "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8")
	srv := start(t, spec{
		what: "postgresql", bin: postgres, acct: acct, dir: dir,
		args: func(port int) []string {
			return []string{
				"-D", data, "-p", strconv.Itoa(port),
				"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + dir,
				"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "synchronous_commit=off",
			}
		},
		ready: "database system is ready to accept connections",
	})
	srv.Version = versionOf(postgres)
	return srv
}

// PostgresDSN returns a lib/pq connection string for database postgres.
func (s *Server) PostgresDSN() string {
	return "host=127.0.0.1 port=" + s.Port() + " user=postgres dbname=postgres sslmode=disable"
}

func pgVersion(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func mustEval(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}
