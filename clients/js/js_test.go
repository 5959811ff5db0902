// Package js_test runs the Node package's suites (node --test) against a
// real fenceview server of this tree, real PostgreSQL and Redis servers and
// a real S3 store (versitygw),
// after building dist/ from src/ with the pinned TypeScript compiler.
package js_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fenceview/fenceview/client/fenceviewtest"
	"github.com/fenceview/fenceview/internal/dbtest"
	"github.com/fenceview/fenceview/internal/docblocks"
	"github.com/fenceview/fenceview/internal/servertest"
)

// need returns the path of a program the suites cannot run without:
// missing, the test skips, or fails under CI (.ci/run installs Node).
func need(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is required in CI for the Node package's suites: %v", name, err)
		}
		t.Skipf("%s not found: the Node package's suites are skipped", name)
	}
	return p
}

// installed runs npm ci unless node_modules already holds what
// package-lock.json pins (npm writes its own copy of the lock there).
func installed(t *testing.T, npm, dir string) {
	t.Helper()
	want, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	if have, err := os.ReadFile(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil && samePackages(want, have) {
		return
	}
	// --prefer-offline: the npm cache first, the registry for what it lacks.
	run(t, dir, 5*time.Minute, nil, npm, "ci", "--prefer-offline", "--no-audit", "--no-fund")
}

// samePackages compares the "packages" of two lock files, the part npm's
// hidden lock in node_modules repeats (without the root entry).
var versionLine = regexp.MustCompile(`"node_modules/[^"]+": \{\s*"version": "[^"]+"`)

func samePackages(lock, hidden []byte) bool {
	a, b := versionLine.FindAll(lock, -1), versionLine.FindAll(hidden, -1)
	if len(a) == 0 || len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func run(t *testing.T, dir string, limit time.Duration, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// build compiles src/ into dist/ with the pinned compiler (npm run build:
// tsc, which type-checks as it goes, then the Go Redis guard's Lua scripts
// copied beside the output), and compiles test/types/consumer.ts against
// the declarations, as a user's TypeScript does. dist/ is not committed:
// it is built here, by npm run build, and before npm pack (the prepack
// script); the package has no install script.
func build(t *testing.T, node, npm, dir string) {
	t.Helper()
	installed(t, npm, dir)
	run(t, dir, 3*time.Minute, nil, npm, "run", "build")
	tsc := filepath.Join("node_modules", "typescript", "bin", "tsc")
	run(t, dir, 3*time.Minute, nil, node, tsc, "-p", filepath.Join("test", "types", "tsconfig.json"))
}

// built finds node and npm, skips the test in -short mode with the reason
// skipShort unless that is empty, and builds the package (build); it
// returns node's path and the package's directory.
func built(t *testing.T, skipShort string) (node, dir string) {
	t.Helper()
	node, npm := need(t, "node"), need(t, "npm")
	if skipShort != "" && testing.Short() {
		t.Skip(skipShort)
	}
	dir, _ = filepath.Abs(".")
	build(t, node, npm, dir)
	return node, dir
}

// TestPackageBuilds builds the package in -short mode too, so a type error
// in src/ or in the declarations a user compiles against fails fast.
func TestPackageBuilds(t *testing.T) {
	built(t, "")
}

// adminToken is the test server's admin token: the suites force-expire,
// reset counters and rotate signing keys.
const adminToken = "node-suites-admin-token"

// TestNodeSuites runs node --test test/ against a fenceview server (and
// fronts of it that close the first RPC stream under a call:
// servertest.ClosingFronts), a PostgreSQL and a Redis server and versitygw
// (an S3 store) started here. A failing, cancelled or
// skipped node test fails this test; the node summary is in its log.
func TestNodeSuites(t *testing.T) {
	node, dir := built(t, "the Node suites start PostgreSQL, Redis and versitygw: skipped in -short mode")
	srv := fenceviewtest.New(t, fenceviewtest.Config{AdminToken: adminToken})
	pg := dbtest.PostgreSQL(t)
	rd := dbtest.Redis(t)
	s3 := dbtest.Versity(t, "fenced-js")
	ended, restarted := servertest.ClosingFronts(t, srv.URL)
	env := []string{
		"FENCEVIEW_URL=" + srv.URL,
		"FENCEVIEW_ADMIN_TOKEN=" + adminToken,
		"FENCEVIEW_PG_URL=postgres://postgres@" + pg.Addr + "/postgres?sslmode=disable",
		"FENCEVIEW_REDIS_URL=redis://" + rd.Addr,
		"FENCEVIEW_S3_URL=http://" + s3.Addr,
		"FENCEVIEW_S3_BUCKET=fenced-js",
		"FENCEVIEW_S3_ACCESS_KEY=" + dbtest.S3AccessKey,
		"FENCEVIEW_S3_SECRET_KEY=" + dbtest.S3SecretKey,
		"FENCEVIEW_ENDED_URL=" + ended,
		"FENCEVIEW_RESTARTED_URL=" + restarted,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", "--test-concurrency=1", "test/")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	summary := nodeSummary(string(out))
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	t.Logf("node --test (%s, %s, %s):\n%s", pg.Version, rd.Version, s3.Version, summary)
	counts := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^ℹ (tests|pass|fail|cancelled|skipped|todo) (\d+)$`).FindAllStringSubmatch(string(out), -1) {
		counts[m[1]] = m[2]
	}
	if counts["tests"] == "" || counts["tests"] == "0" {
		t.Fatalf("node --test ran no tests:\n%s", out)
	}
	for _, k := range []string{"fail", "cancelled", "skipped", "todo"} {
		if counts[k] != "0" {
			t.Errorf("node --test: %s %s (every suite must run and pass here)\n%s", k, counts[k], out)
		}
	}
}

// TestInstallFromClone follows the README's "Install from a clone" into
// fresh projects: the tarball of npm pack, and the clone's folder itself,
// each installed with npm and loaded by a script with import and with
// require. npm takes ws from its cache when it has it (--prefer-offline).
func TestInstallFromClone(t *testing.T) {
	node := need(t, "node")
	npm := need(t, "npm")
	dir, _ := filepath.Abs(".")
	docblocks.Says(t, filepath.Join(dir, "README.md"),
		"## Install from a clone",
		"cd <path-to-clone>/clients/js && npm ci && npm run build",
		"npm pack",
		"npm install <path-to-clone>/clients/js/fenceview-0.1.0.tgz",
		"npm install <path-to-clone>/clients/js\n",
	)
	build(t, node, npm, dir) // npm ci's part: node_modules and dist/
	packs := t.TempDir()
	run(t, dir, 3*time.Minute, nil, npm, "pack", "--pack-destination", packs)
	tarball := filepath.Join(packs, "fenceview-0.1.0.tgz")
	if _, err := os.Stat(tarball); err != nil {
		t.Fatalf("npm pack wrote no %s: %v", filepath.Base(tarball), err)
	}
	for name, from := range map[string]string{"tarball": tarball, "folder": dir} {
		t.Run(name, func(t *testing.T) {
			project := t.TempDir()
			docblocks.WriteFile(t, filepath.Join(project, "package.json"), `{"name":"try-fenceview","version":"1.0.0","private":true}`)
			out := run(t, project, 3*time.Minute, nil, npm, "install", "--prefer-offline", "--no-audit", "--no-fund", from)
			// The package runs nothing when installed: no script for npm to warn of.
			if strings.Contains(out, "install-scripts") || strings.Contains(out, "prepare") {
				t.Errorf("npm install of the %s warns of a script:\n%s", name, out)
			}
			docblocks.WriteFile(t, filepath.Join(project, "esm.mjs"), `import { Client, HeldError, parse } from 'fenceview';
const lock = new Client('http://127.0.0.1:1').lock('inventory:42');
console.log(typeof Client, typeof HeldError, lock.resource, parse('{"token":9007199254740993}').token);
`)
			docblocks.WriteFile(t, filepath.Join(project, "cjs.cjs"), `const { Client, HeldError, parse } = require('fenceview');
const lock = new Client('http://127.0.0.1:1').lock('inventory:42');
console.log(typeof Client, typeof HeldError, lock.resource, parse('{"token":9007199254740993}').token);
`)
			want := "function function inventory:42 9007199254740993n\n" // a bigint, exact
			for _, script := range []string{"esm.mjs", "cjs.cjs"} {
				if out := run(t, project, time.Minute, nil, node, script); out != want {
					t.Errorf("node %s in a project that installed the %s: %q, want %q", script, name, out, want)
				}
			}
		})
	}
}

// nodeSummary is the spec reporter's closing lines (ℹ tests, pass, fail ...).
func nodeSummary(out string) string {
	var b strings.Builder
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "ℹ ") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// TestREADMELeftoversAreIgnored: following the Java and JavaScript
// READMEs (javac into clients/java/build/, npm pack in clients/js) leaves
// nothing git would show a clean clone as new.
func TestREADMELeftoversAreIgnored(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not found")
	}
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		t.Skip("not a git checkout")
	}
	for _, p := range []string{"clients/java/build/fenceview-client.jar", "clients/java/build/classes/io/fenceview/FencedLock.class", "clients/js/fenceview-0.1.0.tgz"} {
		cmd := exec.Command(git, "check-ignore", "--no-index", "-q", p)
		cmd.Dir = root
		if err := cmd.Run(); err != nil {
			t.Errorf("git does not ignore %s, which the README's steps leave behind (%v)", p, err)
		}
	}
}
