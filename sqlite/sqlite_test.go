package sqlite

import (
	"context"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
)

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
		if err := db.read.QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&n); err != nil || n != len(files) || n < 3 {
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
	db, err := Open(ctx, filepath.Join(t.TempDir(), "f.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
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
