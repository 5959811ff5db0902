package issuer

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/sqlite"
)

// Open starts where the record left off: the issuer id it was given stays,
// and tokens and sequence numbers go on from the stored ones.
func TestOpenResumesTheRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.db")
	open := func(issuer string) (*Service, *sqlite.DB) {
		db, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		svc, err := Open(ctx, db, Config{Issuer: issuer, SweepInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return svc, db
	}
	svc, db := open("issuer-a")
	g, err := svc.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: "h", Lease: time.Minute, Wait: 0})
	if err != nil {
		t.Fatal(err)
	}
	seq := svc.LastSeq()
	svc.Close()
	db.Close()

	svc, db = open("")
	defer db.Close()
	defer svc.Close()
	if svc.Issuer() != "issuer-a" {
		t.Fatalf("issuer %q after reopening, want issuer-a", svc.Issuer())
	}
	if svc.LastSeq() != seq || seq == 0 {
		t.Fatalf("last seq %d after reopening, want %d", svc.LastSeq(), seq)
	}
	if l, _ := svc.Lock("r"); !l.Locked || l.LastToken != g.Fencing.Token {
		t.Fatalf("lock after reopening = %+v, want held with token %d", l, g.Fencing.Token)
	}
}
