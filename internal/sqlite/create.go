package sqlite

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// A new database appears at its path whole, or not at all.
//
// SQLite creates a database in place: the file, then (switching it to WAL)
// a rollback journal, the header, the WAL, one migration after another.
// None of that needs the directory's entries to be durable until the
// WAL's first fsync, so a power cut during a first start can leave a
// database without its schema, without its issuer or signing key, or, with
// a hot journal rolled back, 0 bytes long; the next start then makes a new
// issuer and key. Nothing has been issued by then, but a guard that saw
// the first start's key would refuse every later grant, and an empty file
// is not what the first start left. So a new database is built under a
// temporary name, given its identity by init, checkpointed into one file
// and fsynced, then renamed into place and the directory fsynced
// (TestPowerCutDuringFirstStart cuts at every sync of a first start).

// absent reports whether path holds no database yet: no file, or an empty
// one (SQLite's empty database) with no WAL that could hold its pages.
func absent(path string) (bool, error) {
	for _, p := range []string{path, path + "-wal"} {
		fi, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return false, err
		case fi.Size() > 0:
			return false, nil
		}
	}
	return true, nil
}

// creatingName is where a new database is built before it is renamed to
// path.
func creatingName(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".creating")
}

// sidecars are the files SQLite keeps beside a database.
var sidecars = []string{"-journal", "-wal", "-shm"}

// create builds the database path, absent, whole: see above.
func create(ctx context.Context, path string, init func(context.Context, *DB) error) (err error) {
	tmp, dir := creatingName(path), filepath.Dir(path)
	removeAll(tmp) // an earlier creation, cut short
	defer func() {
		if err != nil {
			removeAll(tmp)
		}
	}()
	// The database holds the issuer's private signing key: it is created
	// 0600 before SQLite opens it, and SQLite gives its -wal and -shm the
	// database's mode. An empty file an operator made at path keeps its
	// mode, set on the still-empty file, before anything secret is in it.
	if err := createNewPrivate(tmp); err != nil {
		return err
	}
	if fi, err := os.Stat(path); err == nil {
		if err := os.Chmod(tmp, fi.Mode().Perm()); err != nil {
			return err
		}
	}
	db, err := open(ctx, tmp)
	if err != nil {
		return err
	}
	if init != nil {
		if err := init(ctx, db); err != nil {
			db.Close()
			return err
		}
	}
	// Everything into the one file, so that the rename moves all of it.
	if _, err := db.write.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		db.Close()
		return err
	}
	if err := db.Close(); err != nil {
		return err
	}
	if err := syncFile(tmp); err != nil {
		return err
	}
	// What an empty database at path left beside it (a hot journal would
	// be rolled back onto the new file) goes first, durably, then the
	// rename.
	for _, s := range sidecars {
		os.Remove(tmp + s) // none after the checkpoint and close
		if err := os.Remove(path + s); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := syncFile(dir); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncFile(dir)
}

// removeAll removes a database and its sidecars, if there.
func removeAll(path string) {
	for _, s := range append([]string{""}, sidecars...) {
		os.Remove(path + s)
	}
}
