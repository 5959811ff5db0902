package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/fenceview/fenceview/internal/dbtest"
	"github.com/fenceview/fenceview/internal/servertest"
)

// Every file the server and `fenceview backup` create is readable by its
// owner only, even under a umask that takes nothing away: the database,
// its -wal and -shm, the lock file and the backup all hold, or guard, the
// private signing key.
func TestServerFilesArePrivate(t *testing.T) {
	processTest(t)
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
			dbtest.AssertPrivate(t, dir, "fenceview.db", "fenceview.db-wal", "fenceview.db-shm", "fenceview.db.lock", "copy.db")
			p.Signal(syscall.SIGTERM)
			<-p.Done
		})
	}
}

// The disk fills up under the server: writes are refused with a 503 and
// change nothing, reads go on, and once space is back the next token is
// above every token that was ever acknowledged. The database lives on a
// small tmpfs of its own, so the disk really is full.
func TestDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts a small filesystem")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", dir).CombinedOutput(); err != nil {
		if os.Getenv("CI") != "" && os.Geteuid() == 0 {
			t.Fatalf("mount a tmpfs: %v: %s", err, out)
		}
		t.Skipf("cannot mount a tmpfs here (needs root): %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })

	s := startServer(t, func(m *Main) { m.DBPath = filepath.Join(dir, "fenceview.db") })
	// Leave a little room: a filler file takes all but 1 MiB of it.
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, int64(fs.Bavail)*fs.Bsize-1<<20), 0o644); err != nil {
		t.Fatal(err)
	}

	acknowledged := map[string]int64{} // highest token acknowledged per resource
	full := false
	for i := 0; i < 100000 && !full; i++ {
		res := fmt.Sprintf("r-%d", i%50)
		r := s.do("POST", "/v1/locks/"+res+"/acquire", map[string]any{"holder": "h", "leaseMs": 1})
		switch r.Status {
		case 200:
			acknowledged[res] = max(acknowledged[res], tokenOf(r))
			s.clock.Advance(2 * time.Millisecond) // the 1 ms lease is over for the next round
		case 503:
			full = true
			if r.Body["error"] == nil {
				t.Fatalf("503 without a JSON error: %s", r.Raw)
			}
		default:
			t.Fatalf("acquire %d: %d %s", i, r.Status, r.Raw)
		}
	}
	t.Logf("the disk filled after grants on %d resources", len(acknowledged))
	if !full || len(acknowledged) < 20 {
		t.Fatalf("full=%v after grants on %d resources: want a full disk after at least 20", full, len(acknowledged))
	}
	// Reads go on while writes fail.
	if r := s.do("GET", "/v1/resources", nil); r.Status != 200 {
		t.Fatalf("reading while the disk is full: %d %s", r.Status, r.Raw)
	}
	if r := s.do("POST", "/v1/fence/r-0", nil, "X-Fencing-Token", "1"); r.Status != 503 && r.Status != 409 {
		t.Fatalf("a fenced write on a full disk: %d %s", r.Status, r.Raw)
	}

	// Space comes back: writes work again, and tokens keep rising.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for res, before := range acknowledged {
		r := s.do("POST", "/v1/locks/"+res+"/acquire", map[string]any{"holder": "h2", "leaseMs": 1})
		if r.Status != 200 || tokenOf(r) <= before {
			t.Fatalf("%s after space came back: %d %s (acknowledged before: %d)", res, r.Status, r.Raw, before)
		}
		acknowledged[res] = tokenOf(r)
	}
	// Restart on the same file: every acknowledged token is still there.
	s.Close()
	s = startServer(t, func(m *Main) { m.DBPath = filepath.Join(dir, "fenceview.db") })
	for res, before := range acknowledged {
		r := s.do("GET", "/v1/resources/"+res, nil)
		if r.Status != 200 || r.num("lastToken") < before {
			t.Fatalf("%s after restart: %d %s (acknowledged: %d)", res, r.Status, r.Raw, before)
		}
	}
}
