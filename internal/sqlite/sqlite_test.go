package sqlite

import (
	"context"
	"database/sql"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
)

// openTemp opens a database in a new temporary file, closed when tb ends.
func openTemp(tb testing.TB) *DB {
	tb.Helper()
	db, err := Open(context.Background(), filepath.Join(tb.TempDir(), "test.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func TestMigrationsApplyOnceAndIssuerIsStable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "f.db")
	// Every embedded migration once, however many there are.
	files, _ := fs.Glob(migrationFS, "migration/*.sql")
	var first string
	for i := 0; i < 2; i++ {
		db, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.read.QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&n); err != nil || n != len(files) || n < 5 {
			t.Fatalf("open %d: %d migrations recorded, %v", i, n, err)
		}
		id, err := db.Issuer(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = id
		} else if id != first {
			t.Fatalf("issuer changed across reopen: %q then %q", first, id)
		}
		db.Close()
	}
	if _, err := Open(ctx, ":memory:"); err == nil {
		t.Fatal("an in-memory database was accepted: it cannot keep a token")
	}
}

// Apply is all or nothing: an event that cannot be written takes the
// resource rows of its transaction with it.
func TestApplyIsAtomic(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	r := &fenceview.Resource{ResourceID: "r", LastToken: 1, Token: 1, Holder: "a", HoldCount: 1, ExpiresAt: now}
	e := fenceview.Event{Seq: 1, Type: fenceview.EventGrant, ResourceID: "r", Token: 1, Holder: "a", At: now}
	if err := db.Apply(ctx, []*fenceview.Resource{r}, []fenceview.Event{e}); err != nil {
		t.Fatal(err)
	}
	r2 := *r
	r2.LastToken, r2.Token = 2, 2
	dup := e // the same seq again: the insert fails
	if err := db.Apply(ctx, []*fenceview.Resource{&r2}, []fenceview.Event{dup}); err == nil {
		t.Fatal("a duplicate sequence number was accepted")
	}
	rows, err := db.Resources(ctx)
	if err != nil || len(rows) != 1 || rows[0].LastToken != 1 || !rows[0].ExpiresAt.Equal(now) {
		t.Fatalf("after a failed Apply: %+v, %v", rows, err)
	}
	if seq, _ := db.MaxSeq(ctx); seq != 1 {
		t.Fatalf("max seq %d", seq)
	}
}

// TestMinuteCounts: the per-minute counts follow the events committed,
// rejections by reason, and a range selects whole minutes.
func TestMinuteCounts(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	t0 := time.Date(2026, 9, 24, 6, 14, 0, 0, time.UTC)
	ev := func(seq int64, typ, reason string, at time.Time) fenceview.Event {
		return fenceview.Event{Seq: seq, Type: typ, ResourceID: "r", Reason: reason, Source: "s", At: at}
	}
	if err := db.Apply(ctx, nil, []fenceview.Event{
		ev(1, "grant", "", t0), ev(2, "accept", "", t0.Add(10*time.Second)), ev(3, "reject", "stale-token", t0.Add(20*time.Second)),
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Apply(ctx, nil, []fenceview.Event{
		ev(4, "reject", "stale-token", t0.Add(30*time.Second)), ev(5, "reject", "unissued-token", t0.Add(61*time.Second)),
	}); err != nil {
		t.Fatal(err)
	}
	got, err := db.MinuteCounts(ctx, t0, t0.Add(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"06:14 grant ": 1, "06:14 accept ": 1, "06:14 reject stale-token": 2, "06:15 reject unissued-token": 1}
	if len(got) != len(want) {
		t.Fatalf("counts %+v, want %v", got, want)
	}
	for _, c := range got {
		if k := c.Minute.Format("15:04") + " " + c.Type + " " + c.Reason; want[k] != c.N {
			t.Errorf("%s: %d, want %d", k, c.N, want[k])
		}
	}
	if got, _ := db.MinuteCounts(ctx, t0.Add(time.Minute), t0.Add(2*time.Minute)); len(got) != 1 {
		t.Errorf("the second minute alone: %+v", got)
	}
	names, counts, err := db.RejectionSources(ctx, 10)
	if err != nil || len(names) != 1 || names[0] != "s" || counts[0] != 3 {
		t.Errorf("sources %v %v %v", names, counts, err)
	}
}

// The minute counts were migration 0004 on the ops branch before a merge
// renumbered them 0007: a database migrated under the old name opens
// without running them again (the table exists; its counts stay).
func TestRenumberedMigrationIsNotRunAgain(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "f.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 9, 24, 6, 14, 0, 0, time.UTC)
	if err := db.Apply(ctx, nil, []fenceview.Event{{Seq: 1, Type: "grant", ResourceID: "r", Source: "s", At: at}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.write.Exec(`UPDATE schema_migrations SET version = 'migration/0004_event_minutes.sql' WHERE version = 'migration/0007_event_minutes.sql'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if db, err = Open(ctx, path); err != nil {
		t.Fatalf("a database migrated under the old name: %v", err)
	}
	defer db.Close()
	var n int
	if err := db.read.QueryRow(`SELECT COUNT(*) FROM schema_migrations WHERE version = 'migration/0007_event_minutes.sql'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("new name recorded %d times, %v", n, err)
	}
	if err := db.read.QueryRow(`SELECT SUM(n) FROM event_minutes`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("minute counts = %d after reopening, want 1: %v", n, err)
	}
}

// Every connection commits with synchronous=FULL in WAL mode: the WAL is
// fsynced before a commit returns. (The power-cut harness shows what
// NORMAL loses; this keeps a change of the DSN from dropping it quietly.)
func TestEveryConnectionSyncsItsCommits(t *testing.T) {
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "f.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for name, conn := range map[string]interface {
		QueryRow(string, ...any) *sql.Row
	}{"write": db.write, "read": db.read, "checkpoint": db.ckpt} {
		var sync int
		var mode string
		if err := conn.QueryRow(`PRAGMA synchronous`).Scan(&sync); err != nil || sync != 2 {
			t.Errorf("%s connection: synchronous = %d (%v), want 2 (FULL)", name, sync, err)
		}
		if err := conn.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
			t.Errorf("%s connection: journal_mode = %q (%v), want wal", name, mode, err)
		}
	}
}

// An empty file at the path is no database yet: a power cut during a first
// start can leave one, with the hot journal of its switch to WAL beside it,
// which SQLite would roll back onto whatever is built there. Open builds a
// whole database in its place, with the empty file's mode, the journal
// gone, and leaves nothing of the building behind.
func TestOpenReplacesAnEmptyDatabaseAndItsJournal(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "f.db")
	os.WriteFile(path, nil, 0o600)
	os.WriteFile(path+"-journal", []byte("\xd9\xd5\x05\xf9\x20\xa1\x63\xd7 a journal header"), 0o600)
	os.WriteFile(creatingName(path), []byte("an earlier creation, cut short"), 0o600)
	var initSaw int
	db, err := OpenInit(ctx, path, func(ctx context.Context, db *DB) error {
		_, err := db.Issuer(ctx, "first")
		initSaw++
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if id, err := db.Issuer(ctx, ""); err != nil || id != "first" || initSaw != 1 {
		t.Fatalf("issuer %q (%v), init ran %d times", id, err, initSaw)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the database replacing an empty 0600 file: %v %v", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range entries {
		if n := e.Name(); n != "f.db" && n != "f.db-wal" && n != "f.db-shm" {
			t.Errorf("%s left beside the database", n)
		}
	}
	db.Close()
	// An existing database is opened as it is: init is for new ones.
	db, err = OpenInit(ctx, path, func(context.Context, *DB) error { initSaw++; return nil })
	if err != nil || initSaw != 1 {
		t.Fatalf("reopen: %v, init ran %d times", err, initSaw)
	}
	db.Close()
}
