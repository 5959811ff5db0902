package issuer

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/fenceview/fenceview/internal/clock"
)

// Open starts where the record left off: the issuer id it was given stays,
// and tokens and sequence numbers go on from the stored ones.
func TestOpenResumesTheRecord(t *testing.T) {
	h := &harness{clock: clock.NewFake(t0), path: filepath.Join(t.TempDir(), "f.db"), issuer: "issuer-a"}
	h.open(t)
	g := acquire(t, h.Service, "r", "h", time.Minute)
	seq := h.LastSeq()
	h.issuer = "" // a restart that names no issuer keeps the stored one
	h.restart(t)
	svc := h.Service
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
