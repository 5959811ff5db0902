package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/dbtest"
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
			dbtest.AssertPrivate(t, dir, "f.db", "f.db-wal", "f.db-shm", "copy.db")
		})
	}
}
