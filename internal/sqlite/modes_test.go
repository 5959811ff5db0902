package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
)

// The database holds the private signing key, so it is created readable by
// its owner only, and so are the -wal and -shm files SQLite makes beside
// it (SQLite's unix VFS gives them the database file's mode: this test is
// where that is checked) and every backup, whatever the umask.
func TestFilesArePrivate(t *testing.T) {
	for _, umask := range []int{0o022, 0o000} {
		t.Run(fmt.Sprintf("umask=%04o", umask), func(t *testing.T) {
			old := syscall.Umask(umask)
			defer syscall.Umask(old)
			ctx := context.Background()
			dir := t.TempDir()
			db, err := Open(ctx, filepath.Join(dir, "f.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ran := make(chan error, 1)
			db.ObserveCheckpoint = func(_ time.Duration, _ int, err error) {
				select {
				case ran <- err:
				default:
				}
			}
			for i := int64(1); i <= checkpointAfter; i++ {
				r := fenceview.Resource{ResourceID: fmt.Sprintf("r%d", i%7), LastToken: i}
				e := fenceview.Event{Seq: i, Type: fenceview.EventGrant, ResourceID: r.ResourceID, Token: i, At: time.UnixMilli(1_700_000_000_000)}
				if err := db.Apply(ctx, []*fenceview.Resource{&r}, []fenceview.Event{e}); err != nil {
					t.Fatal(err)
				}
			}
			if err := <-ran; err != nil { // the background checkpoint ran
				t.Fatal(err)
			}
			if _, err := Backup(ctx, db.Path, filepath.Join(dir, "copy.db")); err != nil {
				t.Fatal(err)
			}
			seen := assertPrivate(t, dir)
			for _, name := range []string{"f.db", "f.db-wal", "f.db-shm", "copy.db"} {
				if !seen[name] {
					t.Errorf("no %s in %s (found %v)", name, dir, seen)
				}
			}
		})
	}
}

// assertPrivate fails the test for every file in dir that anyone but its
// owner may read or write, and returns the names it looked at.
func assertPrivate(t *testing.T, dir string) map[string]bool {
	t.Helper()
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
	return seen
}
