package server

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/gofrs/flock"
)

// lockDB takes an exclusive lock on a file next to the database, held for
// as long as the server runs, so a second server on the same file refuses
// to start instead of sharing it (SQLite would let both write, each with
// its own counters in memory, and tokens could be issued twice). The lock
// is the kernel's (flock): it goes away with the process, even on SIGKILL.
func lockDB(dbPath string) (*flock.Flock, error) {
	path := dbPath + ".lock"
	l := flock.New(path, flock.SetPermissions(0o600)) // its default, said out loud
	ok, err := l.TryLock()
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	if !ok {
		return nil, fmt.Errorf("another fenceview is already serving %s (it holds %s); stop it first, or give this one another --db", dbPath, path)
	}
	return l, nil
}

// warnIfReadable warns when the database file, which holds the private
// signing key unless --signing-key is given, can be read by others. New
// files are created 0600; a file made by an older fenceview, or copied
// with a looser mode, is the operator's to tighten (chmod 600), not ours.
func warnIfReadable(log *slog.Logger, dbPath string) {
	if fi, err := os.Stat(dbPath); err == nil && fi.Mode().Perm()&0o077 != 0 {
		log.Warn("SECURITY: the database file can be read by other users, and it holds the private signing key; chmod 600 it (and its -wal and -shm files)",
			"db", dbPath, "mode", fmt.Sprintf("%04o", fi.Mode().Perm()))
	}
}
