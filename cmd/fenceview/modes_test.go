package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/fenceview/fenceview/internal/servertest"
)

// Every file the server and `fenceview backup` create is readable by its
// owner only, even under a umask that takes nothing away: the database,
// its -wal and -shm, the lock file and the backup all hold, or guard, the
// private signing key.
func TestServerFilesArePrivate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a real process")
	}
	for _, umask := range []int{0o022, 0o000} {
		t.Run(fmt.Sprintf("umask=%04o", umask), func(t *testing.T) {
			old := syscall.Umask(umask) // inherited by the processes started below
			defer syscall.Umask(old)
			dir := t.TempDir()
			db := filepath.Join(dir, "fenceview.db")
			p := servertest.StartProcess(t, servertest.ProcessOptions{DBPath: db})
			for i := range 20 {
				r := doRequest(t, "POST", fmt.Sprintf("%s/v1/locks/r-%d/acquire", p.URL, i), map[string]any{"holder": "a"})
				if r.Status != 200 {
					t.Fatalf("acquire: %d %s", r.Status, r.Raw)
				}
			}
			backup := filepath.Join(dir, "copy.db")
			if out, err := exec.Command(servertest.Binary(t), "backup", "--db", db, "--out", backup).CombinedOutput(); err != nil {
				t.Fatalf("fenceview backup: %v\n%s", err, out)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, e := range entries {
				info, err := e.Info()
				if err != nil {
					t.Fatal(err)
				}
				seen[e.Name()] = true
				if perm := info.Mode().Perm(); perm != 0o600 {
					t.Errorf("%s is %04o, want 0600", e.Name(), perm)
				}
			}
			for _, name := range []string{"fenceview.db", "fenceview.db-wal", "fenceview.db-shm", "fenceview.db.lock", "copy.db"} {
				if !seen[name] {
					t.Errorf("no %s in the database's directory (found %v)", name, seen)
				}
			}
			p.Signal(syscall.SIGTERM)
			<-p.Done
		})
	}
}
