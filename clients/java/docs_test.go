//go:build !race || racecluster

// Same build constraint as java_test.go, whose helpers (startTLS) this uses.

package javatest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenceview/fenceview/client/fenceviewtest"
	"github.com/fenceview/fenceview/internal/docblocks"
)

// javaDocFiles are the Markdown files whose Java blocks run here.
var javaDocFiles = []string{"README.md", "clients/java/README.md"}

// javaBlocks are the ```java blocks of javaDocFiles; one after a
// docblocks.NotRun line is compiled only.
func javaBlocks(t *testing.T, root string) []docblocks.Block {
	t.Helper()
	blocks, err := docblocks.Read(root, javaDocFiles, "java")
	if err != nil {
		t.Fatal(err)
	}
	return blocks
}

// The addresses the docs name, and what stands for them here: the real
// server (auth on, the block's key a client key), the prelude's guarded
// service on the JDK's HTTP server (the docs' ledger), and a server on
// HTTPS with a private CA (the docs' three TLS nodes are that one server).
var javaDocAddrs = []struct{ doc, here string }{
	{`"http://127.0.0.1:8080"`, `"$URL"`},
	{`"https://fenceview.internal:8443"`, `"$URL"`},
	{`"http://ledger`, `ledger + "`},
	{`"https://fv1:8443"`, `"$TLS"`},
	{`"https://fv2:8443"`, `"$TLS"`},
	{`"https://fv3:8443"`, `"$TLS"`},
}

// fragmentImports are what a block that names no imports of its own (a
// fragment, as the prose around it shows a step) may use. A block that
// has import lines is a whole program body and gets only its own.
const fragmentImports = "import io.fenceview.*; import java.net.*; import java.net.http.*; " +
	"import java.net.http.HttpRequest.BodyPublishers; import java.net.http.HttpResponse.BodyHandlers; " +
	"import java.sql.*; import java.time.*; import java.util.*; import java.util.concurrent.*; " +
	"import com.sun.net.httpserver.*; import javax.net.ssl.*; "

// javaDocChecks are what the blocks must have done, as their prose says:
// Java statements run after the block in its scope (so they see its
// variables), keyed by a line that is in exactly one block. A key that
// matches no block fails the test, so the checks cannot go stale quietly.
var javaDocChecks = map[string]string{
	// README.md: the guard wrote stock 7 with the lock's token.
	`Map.of("stock", 7)`: `expect(readStock(conn, 42) == 7 && fenceToken(conn, 42) == token, "product 42 has stock 7 and the lock's token");`,
	// clients/java/README.md, plain JDBC: stock 100 - 3, fenced by the lock's token.
	`int stock = readStock(db, 42) - 3;`: `expect(readStock(conn, 42) == 97 && fenceToken(conn, 42) > 0, "product 42 has stock 97 and a fence token");`,
	// Lock-delay, semaphore, multi-lock and election.
	`FencedSemaphore jobs = fv.getSemaphore("jobs", 4);`: `expect(lock.getLockDelay().equals(Duration.ofSeconds(5)), "the lock has a 5 s delay"); ` +
		`expect(p.getId().equals("jobs#" + p.slot()) && p.slot() >= 0 && p.slot() < 4 && !p.isHeld(), "a released permit of one of 4 slots, jobs#<slot>"); ` +
		`expect(tokens.keySet().equals(Set.of("acct:1", "acct:2")) && both.getTokens().isEmpty(), "a token per lock, none after unlock"); ` +
		`expect(term > 0 && !e.isLeader(), "elected with a term, then resigned");`,
	// The read-write lock: a shared read phase, fenced as a read, then a writer above it.
	`FencedReadWriteLock rw = fv.getReadWriteLock("report:7");`: `expect(read != null && rt.shared() && seen.accepted() && write != null && write > read, "a read phase's token, fenced as a read, then a larger writer's");`,
	// The verifier accepts the prelude's real grant.
	`TokenVerifier v = TokenVerifier.fetch(fv);`: `expect(real && v.verify(lock.getFencingToken()), "the verifier accepts a real grant");`,
	// The fenced call got through the prelude's guarded service.
	`FencedHttp.Result<String> r = FencedHttp.send(http,`: `expect(r.accepted() && r.response().statusCode() == 204, "the guarded service accepted the lock's token");`,
	// The block's guard guards /apply: a fenced call moves its mark.
	`FencingFilter guard = new FencingFilter(fv);`: `FencedHttp.Result<String> sent = FencedHttp.send(http, HttpRequest.newBuilder(URI.create(ledger + "/apply")).POST(BodyPublishers.ofString(body)), lock.getFencingToken(), BodyHandlers.ofString()); ` +
		`expect(sent.accepted() && guard.highWaterMark(resource) == token, "the block's guard accepted the lock's token on /apply");`,
	// The TLS client with RPC takes and releases a lock.
	`.rpc(true)`: `FencedLock tls = fv.getFencedLock("docs:tls"); expect(tls.tryLockAndGetToken() != null, "a lock over TLS and RPC"); tls.unlock();`,
}

// TestJavaDocBlocksRun compiles every Java block of README.md and
// clients/java/README.md against the client's sources and runs each in a
// JVM of its own against a real server (auth on), a SQLite database, an
// HTTP service on the JDK's server and a server on HTTPS. A block runs as
// the body of main after testdata/docs/Prelude.java has given the names
// its prose leaves to the reader (a client fv, a held lock, a JDBC
// connection, ...); the docs' addresses point at the real servers; its
// lines keep their Markdown line numbers, so a failure names the file and
// line. It must exit 0 and pass its check (javaDocChecks). The prelude's
// lock is released at the end, so no block waits out another's lease.
func TestJavaDocBlocksRun(t *testing.T) {
	javac, java := tools(t)
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	blocks := javaBlocks(t, root)
	if len(blocks) < 7 {
		t.Fatalf("found %d Java blocks in the docs: the extraction is broken", len(blocks))
	}

	srv := fenceviewtest.New(t, fenceviewtest.Config{AdminToken: adminToken})
	key := apiKey(t, srv.URL, "java-docs", "client")
	tlsURL, caFile := startTLS(t)
	here := strings.NewReplacer("$URL", srv.URL, "$TLS", tlsURL)

	// One source per block; the checks' keys must each match exactly one.
	src := t.TempDir()
	matched := map[string]int{}
	var files []string
	at := map[string]string{} // DocBlockN.java -> the block's Markdown file
	for i, b := range blocks {
		name := fmt.Sprintf("DocBlock%d", i)
		var imports, body strings.Builder
		for _, line := range strings.Split(strings.TrimSuffix(b.Code, "\n"), "\n") {
			if strings.HasPrefix(line, "import ") {
				imports.WriteString(line + " ")
				line = ""
			}
			body.WriteString(line + "\n")
		}
		if imports.Len() == 0 {
			imports.WriteString(fragmentImports)
		}
		check := ""
		for key, c := range javaDocChecks {
			if strings.Contains(b.Code, key) {
				matched[key]++
				check = c
			}
		}
		code := body.String()
		for _, a := range javaDocAddrs {
			code = strings.ReplaceAll(code, a.doc, here.Replace(a.here))
		}
		// Line 1 holds the imports, the class and its main, which runs
		// body(); the block starts at its Markdown line, in a scope of its
		// own within body(), and its check follows it.
		java := imports.String() + "import static docs.Prelude.*; public class " + name + " { " +
			"public static void main(String[] args) { try { body(); } catch (Throwable e) { e.printStackTrace(); docs.Prelude.end(1); } docs.Prelude.end(0); } " +
			"static void body() throws Exception { docs.Prelude.start(); {" +
			strings.Repeat("\n", b.Line-1) + code + check + "\n}}}\n"
		f := filepath.Join(src, name+".java")
		docblocks.WriteFile(t, f, java)
		files = append(files, f)
		at[name+".java"] = b.File
	}
	for key := range javaDocChecks {
		if matched[key] != 1 {
			t.Errorf("the check keyed %q matches %d Java blocks of the docs, want 1", key, matched[key])
		}
	}
	// Errors and stack traces name the Markdown file instead of the block's source.
	markdown := func(out []byte) string {
		s := strings.ReplaceAll(string(out), src+string(filepath.Separator), "")
		for name, file := range at {
			s = strings.ReplaceAll(s, name, file)
		}
		return s
	}

	// The client's sources, the prelude and every block in one javac run.
	classes := t.TempDir()
	err := filepath.WalkDir(filepath.Join("src", "main", "java"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".java") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// The prelude trusts the TLS server's CA as the client's own tests do.
	files = append(files, filepath.Join("testdata", "docs", "Prelude.java"), filepath.Join("src", "test", "java", "io", "fenceview", "PrivateCa.java"))
	args := append([]string{"--release", "17", "-encoding", "UTF-8", "-d", classes}, files...)
	if out, err := exec.Command(javac, args...).CombinedOutput(); err != nil {
		t.Fatalf("the docs' Java blocks do not compile (%v):\n%s", err, markdown(out))
	}

	ran := 0
	for i, b := range blocks {
		where := fmt.Sprintf("%s:%d", b.File, b.Line)
		if !b.Run {
			t.Logf("%s: marked not run (compiled only)", where)
			continue
		}
		start := time.Now()
		out, err := docblocks.Run("", 2*time.Minute, []string{"FENCEVIEW_KEY=" + key}, java,
			"-cp", classes+string(os.PathListSeparator)+sqliteJar,
			"-Dfenceview.url="+srv.URL,
			"-Dfenceview.admin="+adminToken,
			"-Dfenceview.tls.ca="+caFile,
			"-Dfenceview.db="+filepath.Join(t.TempDir(), "inventory.db"),
			fmt.Sprintf("DocBlock%d", i))
		if err != nil {
			t.Errorf("%s: the block does not run (%v):\n%s", where, err, markdown(out))
			continue
		}
		if !strings.Contains(string(out), "block ran") {
			t.Errorf("%s: the block ended its program before its last line:\n%s", where, markdown(out))
			continue
		}
		t.Logf("%s ran in %v:\n%s", where, time.Since(start).Round(time.Millisecond), out)
		ran++
	}
	t.Logf("ran %d of %d Java blocks", ran, len(blocks))
}
