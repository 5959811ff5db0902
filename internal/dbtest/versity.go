package dbtest

import (
	"debug/buildinfo"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// VersityGWVersion is the release of versitygw the object-store tests run
// against; .ci/run installs exactly it with go install.
const VersityGWVersion = "v1.8.0"

// S3 access key and secret of the store Versity starts (its root account).
const (
	S3AccessKey = "fenceview-test"
	S3SecretKey = "fenceview-test-secret"
)

// Versity starts versitygw, an S3-compatible gateway, with its posix
// backend on a new temporary directory, one bucket per name in buckets
// created in it, on 127.0.0.1 and a free port. Its root account is
// S3AccessKey and S3SecretKey; Addr takes path-style requests
// (http://Addr/bucket/key). It honours If-Match and If-None-Match: * on
// PutObject, If-Match on DeleteObject and CompleteMultipartUpload, which
// is what the object-store guards need.
//
// The binary is found where go install puts it ($GOBIN, $(go env
// GOPATH)/bin), where .ci/run installs it, else on PATH.
func Versity(t testing.TB, buckets ...string) *Server {
	t.Helper()
	short(t, "versitygw")
	bin := findVersity()
	if bin == "" {
		missing(t, "versitygw not found (go install github.com/versity/versitygw/cmd/versitygw@%s)", VersityGWVersion)
	}
	dir := tempDir(t, "versitygw", nil)
	data := filepath.Join(dir, "data")
	// A bucket of the posix backend is a directory under its root.
	for _, b := range buckets {
		if err := os.MkdirAll(filepath.Join(data, b), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	srv := start(t, spec{
		what: "versitygw", bin: bin, dir: dir,
		args: func(port int) []string {
			return []string{
				"--port", "127.0.0.1:" + strconv.Itoa(port),
				"--access", S3AccessKey, "--secret", S3SecretKey,
				"--region", "us-east-1",
				"posix", data,
			}
		},
		ready: "service listening on",
	})
	v := moduleVersion(bin)
	if v != VersityGWVersion && os.Getenv("CI") != "" {
		t.Fatalf("%s is versitygw %s; CI runs %s (.ci/run installs it)", bin, v, VersityGWVersion)
	}
	srv.Version = "versitygw " + v
	return srv
}

// findVersity returns the path of versitygw, or "" when it is not
// installed.
func findVersity() string {
	var dirs []string
	if gobin := os.Getenv("GOBIN"); gobin != "" {
		dirs = append(dirs, gobin)
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		for _, p := range filepath.SplitList(strings.TrimSpace(string(out))) {
			dirs = append(dirs, filepath.Join(p, "bin"))
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"))
	}
	// Where .ci/run installs it first, so another release on PATH does not
	// shadow the one the tests want.
	for _, d := range dirs {
		p := filepath.Join(d, "versitygw")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return find([]string{"versitygw"})
}

// moduleVersion is the module version go install recorded in bin
// ("v1.8.0"); versitygw's own --version says only "git" for such builds.
func moduleVersion(bin string) string {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "(unknown version)"
	}
	return info.Main.Version
}
