package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mattn/go-sqlite3"
)

// Backup copies the database at src, which a server may be writing, to a
// new file dst with SQLite's online backup API: one consistent snapshot
// (a read transaction: WAL lets the server go on committing meanwhile),
// checked with PRAGMA integrity_check, fsynced, then renamed into place.
// It returns the number of pages copied. dst must not exist.
func Backup(ctx context.Context, src, dst string) (pages int, err error) {
	if _, err := os.Stat(src); err != nil {
		return 0, err
	}
	if _, err := os.Stat(dst); err == nil {
		return 0, fmt.Errorf("%s exists; a backup never overwrites", dst)
	} else if !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	tmp := filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".partial")
	os.Remove(tmp)
	// The copy holds the signing key too: created 0600 before SQLite opens
	// it (its journal then gets the same mode), renamed into place whole.
	if err := createNewPrivate(tmp); err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if pages, err = copyInto(ctx, src, tmp); err != nil {
		return 0, err
	}
	if err := syncFile(tmp); err != nil {
		return 0, err
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		os.Remove(tmp + suffix) // empty after the checkpoint and close
	}
	if err := os.Rename(tmp, dst); err != nil {
		return 0, err
	}
	return pages, syncFile(filepath.Dir(dst))
}

// copyInto copies a snapshot of src into the empty database file tmp,
// folds and checks it, and closes it with everything in the main file.
func copyInto(ctx context.Context, src, tmp string) (pages int, err error) {
	srcDB, err := sql.Open("sqlite3", dsn(src, true))
	if err != nil {
		return 0, err
	}
	defer srcDB.Close()
	dstDB, err := sql.Open("sqlite3", "file:"+tmp+"?_journal_mode=DELETE&_synchronous=FULL")
	if err != nil {
		return 0, err
	}
	defer dstDB.Close()

	srcConn, err := srcDB.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer srcConn.Close()
	dstConn, err := dstDB.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer dstConn.Close()

	if pages, err = snapshot(srcConn, dstConn); err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	if err := settleCopy(ctx, dstConn); err != nil {
		return 0, err
	}
	dstConn.Close()
	return pages, dstDB.Close()
}

// snapshot copies every page of src's main database into dst's with
// SQLite's online backup API, and returns how many it copied.
func snapshot(src, dst *sql.Conn) (pages int, err error) {
	err = dst.Raw(func(d any) error {
		return src.Raw(func(s any) error {
			b, err := d.(*sqlite3.SQLiteConn).Backup("main", s.(*sqlite3.SQLiteConn), "main")
			if err != nil {
				return err
			}
			// All pages in one step: the copy is one snapshot. Stepping
			// in slices would restart whenever the server commits.
			done, err := b.Step(-1)
			pages = b.PageCount()
			if ferr := b.Finish(); err == nil {
				err = ferr
			}
			if err == nil && !done {
				err = errors.New("backup did not finish")
			}
			return err
		})
	})
	return pages, err
}

// settleCopy folds the copy's log, so that its resources table is
// complete for anyone who reads the file directly (a restored server
// would fold it at start anyway), checks the copy whole and checkpoints
// it into its main file.
func settleCopy(ctx context.Context, conn *sql.Conn) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, foldSQL); err != nil {
		tx.Rollback()
		return fmt.Errorf("backup: fold: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	// The copy keeps the source's WAL mode in its header; a restored file
	// is opened by fenceview, which asks for WAL anyway.
	var check string
	if err := conn.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&check); err != nil {
		return err
	}
	if check != "ok" {
		return fmt.Errorf("backup failed its integrity check: %s", check)
	}
	_, err = conn.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
