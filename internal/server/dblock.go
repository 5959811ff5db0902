package server

import (
	"fmt"

	"github.com/gofrs/flock"
)

// lockDB takes an exclusive lock on a file next to the database, held for
// as long as the server runs, so a second server on the same file refuses
// to start instead of sharing it (SQLite would let both write, each with
// its own counters in memory, and tokens could be issued twice). The lock
// is the kernel's (flock): it goes away with the process, even on SIGKILL.
func lockDB(dbPath string) (*flock.Flock, error) {
	path := dbPath + ".lock"
	l := flock.New(path)
	ok, err := l.TryLock()
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	if !ok {
		return nil, fmt.Errorf("another fenceview is already serving %s (it holds %s); stop it first, or give this one another --db", dbPath, path)
	}
	return l, nil
}
