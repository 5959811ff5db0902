package powercut

import (
	"os"
	"os/exec"
	"testing"
)

// Require skips t unless this machine can mount a powercut filesystem:
// /dev/fuse, and root or fusermount3 (Debian's fuse3). Under CI (the CI
// environment variable set) it fails t instead, so that a green CI run has
// cut the power.
func Require(t testing.TB) {
	t.Helper()
	msg := ""
	if f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0); err != nil {
		msg = "no usable /dev/fuse: " + err.Error()
	} else {
		f.Close()
		if _, err := exec.LookPath("fusermount3"); err != nil && os.Geteuid() != 0 {
			msg = "mounting FUSE needs root or fusermount3 (Debian: fuse3)"
		}
	}
	if msg == "" {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (CI must run the power-cut tests: .ci/run installs fuse3 and runs as root)", msg)
	}
	t.Skipf("%s: skipped", msg)
}
