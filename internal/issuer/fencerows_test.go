package issuer

import (
	"database/sql"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
)

// The server's fenced writes append their events alone (no resource row
// logged), and a restart reads back the marks and counters they left.
func TestFencedWritesAppendOneRowAndSurviveRestart(t *testing.T) {
	h := newHarness(t)
	g := acquire(t, h.Service, "r", "a", time.Minute)
	logRows := func() (n int) {
		t.Helper()
		db, err := sql.Open("sqlite3", "file:"+h.path+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.QueryRow(`SELECT COUNT(*) FROM resource_log`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := logRows()
	for _, tok := range []guard.Token{g.Fencing, {Token: g.Fencing.Token + 5}, g.Fencing} {
		if _, err := h.Fence(ctx, fenceview.Fence{ResourceID: "r", Token: tok, Source: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := logRows(); n != before {
		t.Fatalf("three fences logged %d resource rows", n-before)
	}
	want, err := h.Resource("r")
	if err != nil || want.Accepted != 2 || want.Rejected != 1 || want.HighWaterMark != g.Fencing.Token {
		t.Fatalf("before restart: %+v (%v)", want, err)
	}
	h.restart(t)
	got, err := h.Resource("r")
	if err != nil || got.Accepted != want.Accepted || got.Rejected != want.Rejected || got.HighWaterMark != want.HighWaterMark ||
		!got.LastRejectionAt.Equal(want.LastRejectionAt) || got.Holder != want.Holder || got.LastToken != want.LastToken {
		t.Fatalf("after restart: %+v (%v), want %+v", got, err, want)
	}
}
