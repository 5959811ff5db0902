// Package python_test runs the Python package's unittest suites against a
// real fenceview server of this tree (plain, and TLS with client
// certificates) and a real PostgreSQL server, with Debian's own Python and
// its python3-cryptography and python3-psycopg2; and installs the package
// into a virtual environment as the README says, with no package index.
package python_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fenceview/fenceview/client/fenceviewtest"
	"github.com/fenceview/fenceview/internal/clock"
	"github.com/fenceview/fenceview/internal/dbtest"
	"github.com/fenceview/fenceview/internal/docblocks"
	"github.com/fenceview/fenceview/internal/httpapi"
	"github.com/fenceview/fenceview/internal/server"
	"github.com/fenceview/fenceview/internal/servertest"
)

// TestMain removes the fenceview command startTLS builds.
func TestMain(m *testing.M) { servertest.Main(m) }

// debianPython is the interpreter the suites run with: Debian's, whose
// python3-cryptography and python3-psycopg2 are the packages .ci/run
// installs (a pyenv or other python3 first on PATH has neither).
const debianPython = "/usr/bin/python3"

// python returns the interpreter (FENCEVIEW_PYTHON, else Debian's) once it
// has checked it is 3.9 or later and imports modules. Missing, the test
// skips, or fails under CI, whose run must exercise the Python client.
func python(t *testing.T, modules ...string) string {
	t.Helper()
	py := os.Getenv("FENCEVIEW_PYTHON")
	if py == "" {
		py = debianPython
	}
	check := "import sys\nassert sys.version_info >= (3, 9), sys.version\n"
	for _, m := range modules {
		check += "import " + m + "\n"
	}
	out, err := exec.Command(py, "-c", check).CombinedOutput()
	if err != nil {
		msg := fmt.Sprintf("%s with %s: %v\n%s", py, strings.Join(modules, ", "), err, out)
		if os.Getenv("CI") != "" {
			t.Fatalf("%s\n(CI must run the Python suites: .ci/run installs python3, python3-cryptography, python3-psycopg2, python3-venv, python3-setuptools and python3-wheel)", msg)
		}
		t.Skipf("the Python client's tests are skipped: %s", msg)
	}
	return py
}

const adminToken = "python-suites-admin-token"

// startTLS starts a server on HTTPS that requires client certificates, with
// the certificates of fenceview dev-cert.
func startTLS(t *testing.T) (url, dir string) {
	t.Helper()
	dir = t.TempDir()
	if out, err := exec.Command(servertest.Binary(t), "dev-cert", "--dir", dir, "--host", "127.0.0.1").CombinedOutput(); err != nil {
		t.Fatalf("fenceview dev-cert: %v\n%s", err, out)
	}
	srv := servertest.Start(t, server.Config{Clock: clock.Real{}, Access: server.Access{
		TLSCert: filepath.Join(dir, "cert.pem"), TLSKey: filepath.Join(dir, "key.pem"), TLSClientCA: filepath.Join(dir, "ca.pem")}})
	if !strings.HasPrefix(srv.URL(), "https://") {
		t.Fatalf("TLS server URL %s", srv.URL())
	}
	return srv.URL(), dir
}

// codes lists every refusal code of the server with its status, for the
// suite that checks each has its error class.
func codes() string {
	var out []string
	for code, status := range httpapi.Codes() {
		out = append(out, fmt.Sprintf("%s=%d", code, status))
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// TestPythonSuites runs python3 -m unittest over tests/ against the
// servers started here (with fronts of the plain one that close the first
// RPC stream under a call: servertest.ClosingFronts). A failing or skipped Python test fails this test;
// unittest's report is in its log.
func TestPythonSuites(t *testing.T) {
	py := python(t, "cryptography", "psycopg2")
	if testing.Short() {
		t.Skip("the Python suites start PostgreSQL and a TLS server: skipped in -short mode")
	}
	srv := fenceviewtest.New(t, fenceviewtest.Config{AdminToken: adminToken})
	tlsURL, certs := startTLS(t)
	pg := dbtest.PostgreSQL(t)
	ended, restarted := servertest.ClosingFronts(t, srv.URL)
	env := []string{
		"PYTHONPATH=src",
		"PYTHONDONTWRITEBYTECODE=1",
		"FENCEVIEW_URL=" + srv.URL,
		"FENCEVIEW_ADMIN_TOKEN=" + adminToken,
		"FENCEVIEW_TLS_URL=" + tlsURL,
		"FENCEVIEW_TLS_CA=" + filepath.Join(certs, "ca.pem"),
		"FENCEVIEW_TLS_CLIENT_CERT=" + filepath.Join(certs, "client.pem"),
		"FENCEVIEW_TLS_CLIENT_KEY=" + filepath.Join(certs, "client-key.pem"),
		"FENCEVIEW_PG_DSN=host=" + pg.Host() + " port=" + pg.Port() + " user=postgres dbname=postgres sslmode=disable",
		"FENCEVIEW_CODES=" + codes(),
		"FENCEVIEW_ENDED_URL=" + ended,
		"FENCEVIEW_RESTARTED_URL=" + restarted,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	report := string(out)
	if err != nil {
		t.Fatalf("python3 -m unittest: %v\n%s", err, report)
	}
	ran := regexp.MustCompile(`(?m)^Ran (\d+) tests? in `).FindStringSubmatch(report)
	if ran == nil || ran[1] == "0" {
		t.Fatalf("python3 -m unittest ran no tests:\n%s", report)
	}
	var skipped []string
	for _, line := range strings.Split(report, "\n") {
		if strings.Contains(line, " ... skipped ") {
			skipped = append(skipped, line)
		}
	}
	if len(skipped) > 0 || !regexp.MustCompile(`(?m)^OK$`).MatchString(report) {
		t.Errorf("every Python test must run and pass here; skipped:\n%s\n\n%s", strings.Join(skipped, "\n"), report)
	}
	t.Logf("python3 -m unittest: %s tests (%s)", ran[1], pg.Version)
	if seed := regexp.MustCompile(`FENCEVIEW_WS_SEED=\d+`).FindString(report); seed != "" {
		t.Logf("websocket fuzz: %s", seed)
	}
}

// TestInstallWithoutAnIndex follows the README's "Install": a virtual
// environment made from Debian's Python with its system packages, and pip
// install --no-build-isolation of the folder, with no package index at all
// (--no-index), building with Debian's setuptools. It installs a copy, so
// the build leaves nothing in the tree.
func TestInstallWithoutAnIndex(t *testing.T) {
	py := python(t, "venv", "ensurepip", "setuptools", "wheel")
	if testing.Short() {
		t.Skip("building and installing the package: skipped in -short mode")
	}
	dir, _ := filepath.Abs(".")
	docblocks.Says(t, filepath.Join(dir, "README.md"),
		"python3 -m venv --system-site-packages .venv",
		".venv/bin/pip install --no-build-isolation ./clients/python",
	)
	work := t.TempDir()
	clone := filepath.Join(work, "clients", "python")
	copyPackage(t, dir, clone)
	run(t, work, py, "-m", "venv", "--system-site-packages", ".venv")
	run(t, work, filepath.Join(work, ".venv", "bin", "pip"), "install", "--no-index", "--no-build-isolation", "./clients/python")
	// Run from elsewhere, so the import is the installed package's.
	out := run(t, t.TempDir(), filepath.Join(work, ".venv", "bin", "python"), "-c", `
import os, fenceview
here = os.path.dirname(fenceview.__file__)
print(here.startswith(os.environ["VENV"]), os.path.exists(os.path.join(here, "py.typed")), fenceview.__version__)
print(fenceview.validate_token(2**63 - 1), fenceview.Client("http://127.0.0.1:1").lock("inventory:42", holder="worker-7").name)
`)
	want := "True True 0.1.0\n9223372036854775807 inventory:42\n"
	if out != want {
		t.Errorf("the installed package printed %q, want %q", out, want)
	}
}

// copyPackage copies the package's source (not what a build leaves) to dst.
func copyPackage(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() && (d.Name() == "build" || d.Name() == "__pycache__" || strings.HasSuffix(d.Name(), ".egg-info")) {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PIP_NO_INPUT=1", "PIP_DISABLE_PIP_VERSION_CHECK=1", "VENV="+filepath.Dir(filepath.Dir(name)))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}
