package dbtest

import (
	"os"
	"testing"
)

// AssertPrivate fails the test for every file in dir (a database's
// directory: its file, journal, lock and backups) that anyone but its
// owner may read or write, and for every one of want that is not there.
func AssertPrivate(t testing.TB, dir string, want ...string) {
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
	for _, name := range want {
		if !seen[name] {
			t.Errorf("no %s in %s (found %v)", name, dir, seen)
		}
	}
}
