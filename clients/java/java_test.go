//go:build !race || racecluster

// Under the race detector etcd, which the cluster run embeds, is slow to build;
// the race run (-short) would skip these tests anyway.

package javatest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fenceview/fenceview/client/fenceviewtest"
	"github.com/fenceview/fenceview/internal/clock"
	"github.com/fenceview/fenceview/internal/cluster/etcdtest"
	"github.com/fenceview/fenceview/internal/dbtest"
	"github.com/fenceview/fenceview/internal/docblocks"
	"github.com/fenceview/fenceview/internal/server"
	"github.com/fenceview/fenceview/internal/servertest"
)

// Where Debian's packages put the jars (dpkg -L junit5 libpostgresql-jdbc-java
// libmariadb-java libxerial-sqlite-jdbc-java).
const (
	consoleJar  = "/usr/share/java/junit-platform-console-standalone.jar"
	postgresJar = "/usr/share/java/postgresql.jar"
	mariadbJar  = "/usr/share/java/mariadb-java-client.jar"
	sqliteJar   = "/usr/share/java/sqlite-jdbc.jar"
)

const adminToken = "java-test-admin-token"

// TestMain removes the fenceview command startTLS builds.
func TestMain(m *testing.M) { servertest.Main(m) }

// need skips the test when something it needs is not installed, and fails
// it under CI, whose run must exercise the Java client.
func need(t *testing.T, what string, ok bool) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is required in CI (.ci/run installs openjdk-17-jdk-headless, junit5 and the JDBC drivers)", what)
	}
	t.Skipf("%s not installed: skipped", what)
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// tools finds javac and java, or skips.
func tools(t *testing.T) (javac, java string) {
	t.Helper()
	if testing.Short() {
		t.Skip("the Java client's tests are skipped in -short mode")
	}
	javac, errc := exec.LookPath("javac")
	java, errj := exec.LookPath("java")
	need(t, "a JDK (javac, java)", errc == nil && errj == nil)
	for _, jar := range []string{consoleJar, postgresJar, mariadbJar, sqliteJar} {
		need(t, jar, exists(jar))
	}
	return javac, java
}

// compile builds the library and its tests into a temporary directory.
func compile(t *testing.T, javac string) string {
	t.Helper()
	out := t.TempDir()
	var srcs []string
	for _, dir := range []string{"src/main/java", "src/test/java"} {
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".java") {
				srcs = append(srcs, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	args := append([]string{"--release", "17", "-Xlint:all", "-Werror", "-encoding", "UTF-8", "-d", out, "-cp", consoleJar}, srcs...)
	if b, err := exec.Command(javac, args...).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, b)
	}
	return out
}

// apiKey creates an API key of role on srv and returns its secret.
func apiKey(t *testing.T, url, name, role string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"name": name, "role": role})
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/auth/keys", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Secret string `json:"secret"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusCreated || out.Secret == "" {
		t.Fatalf("create key: status %d, %v", resp.StatusCode, err)
	}
	return out.Secret
}

// The JUnit console launcher's summary lines, e.g. "[        42 tests successful      ]".
var summaryLine = regexp.MustCompile(`\[\s+(\d+) tests (successful|failed|skipped|aborted|found)\s+\]`)

// TestJava compiles the Java client and runs its JUnit 5 tests against a real
// fenceview server (auth on: a client key for locks, the admin token for
// force-expire and key rotation), a two-node cluster, a server on HTTPS,
// fronts of the server that close the first RPC stream under a call
// (servertest.ClosingFronts), and real PostgreSQL and MariaDB servers. Any
// Java test that fails, is skipped or is aborted fails it.
func TestJava(t *testing.T) {
	javac, java := tools(t)
	pg := dbtest.PostgreSQL(t)
	maria := dbtest.MariaDB(t)
	srv := fenceviewtest.New(t, fenceviewtest.Config{AdminToken: adminToken})
	key := apiKey(t, srv.URL, "java-tests", "client")
	leader, follower, control := startCluster(t)
	tlsURL, caFile := startTLS(t)
	ended, restarted := servertest.ClosingFronts(t, srv.URL)
	classes := compile(t, javac)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cp := strings.Join([]string{classes, postgresJar, mariadbJar, sqliteJar}, string(os.PathListSeparator))
	cmd := exec.CommandContext(ctx, java,
		"-Dfenceview.url="+srv.URL,
		"-Dfenceview.key="+key,
		"-Dfenceview.admin="+adminToken,
		"-Dfenceview.postgres=jdbc:postgresql://"+pg.Addr+"/postgres?user=postgres",
		"-Dfenceview.mariadb=jdbc:mariadb://"+maria.Addr+"/",
		"-Dfenceview.tmp="+t.TempDir(),
		"-Dfenceview.cluster.leader="+leader,
		"-Dfenceview.cluster.follower="+follower,
		"-Dfenceview.cluster.control="+control,
		"-Dfenceview.tls.url="+tlsURL,
		"-Dfenceview.tls.ca="+caFile,
		"-Dfenceview.ended.url="+ended,
		"-Dfenceview.restarted.url="+restarted,
		"-jar", consoleJar,
		"--class-path", cp,
		"--select-package", "io.fenceview",
		"--disable-banner", "--disable-ansi-colors", "--details=tree", "--details-theme=ascii",
		"--fail-if-no-tests",
	)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("JUnit (%s, %s, PostgreSQL %s, MariaDB %s):\n%s", javaVersion(java), srv.URL, pg.Version, maria.Version, out.String())
	counts := map[string]int{}
	for _, m := range summaryLine.FindAllStringSubmatch(out.String(), -1) {
		n, _ := strconv.Atoi(m[1])
		counts[m[2]] = n
	}
	if err != nil {
		t.Fatalf("JUnit run failed: %v (%d failed, %d aborted of %d)", err, counts["failed"], counts["aborted"], counts["found"])
	}
	if counts["successful"] == 0 || counts["successful"] != counts["found"] || counts["skipped"] > 0 || counts["aborted"] > 0 {
		t.Fatalf("JUnit summary: %v; want every test run and successful", counts)
	}
	t.Logf("Java tests: %d successful of %d", counts["successful"], counts["found"])
}

// startTLS starts a fenceview server serving HTTPS with the certificate
// `fenceview dev-cert` makes for 127.0.0.1, and returns its URL and the dev
// CA's PEM file, which the Java test trusts through its own SSLContext: the
// way a user tries TLS on one machine.
func startTLS(t *testing.T) (url, caFile string) {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command(servertest.Binary(t), "dev-cert", "--dir", dir, "--host", "127.0.0.1").CombinedOutput(); err != nil {
		t.Fatalf("fenceview dev-cert: %v\n%s", err, out)
	}
	srv := servertest.Start(t, server.Config{Clock: clock.Real{}, Access: server.Access{
		TLSCert: filepath.Join(dir, "cert.pem"), TLSKey: filepath.Join(dir, "key.pem")}})
	if !strings.HasPrefix(srv.URL(), "https://") {
		t.Fatalf("TLS server URL %s", srv.URL())
	}
	return srv.URL(), filepath.Join(dir, "ca.pem")
}

// startCluster starts a fenceview cluster of two nodes over a real etcd (in
// the test process), waits until one leads, and serves a control endpoint,
// POST /stop?url=<node>, with which the Java test stops a node (its listener
// closes: connections to it are refused from then on).
func startCluster(t *testing.T) (leader, follower, control string) {
	t.Helper()
	etcd := etcdtest.Start(t, 1)
	nodes := map[string]*servertest.Server{}
	var mu sync.Mutex
	stop := func(u string) bool {
		mu.Lock()
		defer mu.Unlock()
		n, ok := nodes[u]
		if ok {
			delete(nodes, u)
			n.Close()
		}
		return ok
	}
	var urls []string
	for i := 0; i < 2; i++ {
		n := servertest.Start(t, server.Config{
			Clock:   clock.Real{},
			Cluster: server.ClusterConfig{Etcd: etcd.Endpoints(), Prefix: "/javatest/", ElectionTTL: time.Second},
		})
		nodes[n.URL()] = n
		urls = append(urls, n.URL())
		t.Cleanup(func() { stop(n.URL()) })
	}
	// Wait, by the cluster's own answer, until a leader is named.
	deadline := time.Now().Add(time.Minute)
	for leader == "" {
		if time.Now().After(deadline) {
			t.Fatal("the cluster named no leader within a minute")
		}
		var c struct {
			Leader *struct {
				URL string `json:"url"`
			} `json:"leader"`
		}
		if resp, err := http.Get(urls[0] + "/v1/cluster"); err == nil {
			json.NewDecoder(resp.Body).Decode(&c)
			resp.Body.Close()
		}
		if c.Leader != nil {
			leader = c.Leader.URL
			continue
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, u := range urls {
		if u != leader {
			follower = u
		}
	}
	if follower == "" || len(urls) != 2 || (leader != urls[0] && leader != urls[1]) {
		t.Fatalf("leader %q is not one of the nodes %v", leader, urls)
	}
	ctl := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/stop" || !stop(r.URL.Query().Get("url")) {
			http.Error(w, "unknown node or request", http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(ctl.Close)
	return leader, follower, ctl.URL
}

func javaVersion(java string) string {
	b, _ := exec.Command(java, "-version").CombinedOutput()
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(line)
}

// TestJavaBench measures lock/unlock cycles per second from 64 Java threads
// against a real server (io.fenceview.LockBench). It runs only when
// FENCEVIEW_JAVA_BENCH is set (a duration, e.g. 10s), as a measurement, not a
// check:
//
//	FENCEVIEW_JAVA_BENCH=10s go test ./clients/java -run TestJavaBench -v
func TestJavaBench(t *testing.T) {
	d := os.Getenv("FENCEVIEW_JAVA_BENCH")
	if d == "" {
		t.Skip("set FENCEVIEW_JAVA_BENCH=10s to measure")
	}
	dur, err := time.ParseDuration(d)
	if err != nil {
		t.Fatal(err)
	}
	javac, java := tools(t)
	srv := fenceviewtest.New(t)
	classes := compile(t, javac)
	cmd := exec.Command(java, "-cp", classes+string(os.PathListSeparator)+consoleJar,
		"io.fenceview.LockBench", srv.URL, "64", fmt.Sprint(dur.Milliseconds()))
	b, err := cmd.CombinedOutput()
	t.Logf("%s", b)
	if err != nil {
		t.Fatal(err)
	}
}

// TestJavaInstallFromClone does what clients/java/README.md's "Install from a
// clone" says, word for word: it runs the javac and jar lines of its first sh
// block in a fresh directory holding what a clone has here (src/main), then
// compiles and runs a small program against the jar it built, which takes and
// releases a lock on a real server. (The Maven line needs Maven Central.)
func TestJavaInstallFromClone(t *testing.T) {
	javac, java := tools(t)
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := installLines(t, string(readme), "## Install from a clone")
	clone := t.TempDir()
	if err := os.CopyFS(filepath.Join(clone, "src", "main"), os.DirFS(filepath.Join("src", "main"))); err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, line := range lines {
		if !strings.HasPrefix(line, "javac ") && !strings.HasPrefix(line, "jar ") {
			continue
		}
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir = clone
		// The README's javac and jar are the JDK's, found on PATH as the test's own.
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(javac)+string(os.PathListSeparator)+os.Getenv("PATH"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("README line %q: %v\n%s", line, err, out)
		}
		ran++
	}
	if ran != 2 {
		t.Fatalf("ran %d javac/jar lines of the README's install block, want 2: %q", ran, lines)
	}
	jar := filepath.Join(clone, "build", "fenceview-client.jar")
	if !exists(jar) {
		t.Fatalf("the README's commands built no %s", jar)
	}

	app := t.TempDir()
	const hello = `import io.fenceview.*;

public class Hello {
    public static void main(String[] args) {
        try (FenceviewClient fv = FenceviewClient.create(args[0])) {
            FencedLock lock = fv.getFencedLock("hello");
            Long token = lock.tryLockAndGetToken();
            System.out.println("token " + token + " verified " + TokenVerifier.fetch(fv).verify(lock.getFencingToken()));
            lock.unlock();
        }
    }
}
`
	if err := os.WriteFile(filepath.Join(app, "Hello.java"), []byte(hello), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(javac, "--release", "17", "-cp", jar, "-d", app, filepath.Join(app, "Hello.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac Hello.java against the jar: %v\n%s", err, out)
	}
	srv := fenceviewtest.New(t)
	out, err := exec.Command(java, "-cp", jar+string(os.PathListSeparator)+app, "Hello", srv.URL).CombinedOutput()
	if err != nil {
		t.Fatalf("java Hello: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "token 1 verified true" {
		t.Fatalf("Hello printed %q, want %q", got, "token 1 verified true")
	}
}

// installLines returns the command lines of the first sh block after heading
// in the README, comments and blank lines dropped.
func installLines(t *testing.T, readme, heading string) []string {
	t.Helper()
	code, err := docblocks.After(readme, heading, "sh")
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	var out []string
	for _, l := range strings.Split(code, "\n") {
		if l, _, _ = strings.Cut(l, " #"); strings.TrimSpace(l) != "" && !strings.HasPrefix(strings.TrimSpace(l), "#") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}
