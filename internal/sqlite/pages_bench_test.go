package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
)

// WAL frames (pages written) per durable commit of one grant: one existing
// resource row changed and one event appended. Every frame is a page the
// fsync has to carry, and B-tree work on the write path; the count does not
// depend on the machine's load, unlike the time.
//
//	go test ./sqlite -run '^$' -bench Pages -benchmem
func BenchmarkApplyPages(b *testing.B) {
	// 1: one client, every change its own commit; 32: a group commit at
	// 64 clients, changes spread over the resources.
	for _, perTx := range []int{1, 32} {
		b.Run(fmt.Sprintf("changes=%d", perTx), func(b *testing.B) {
			ctx := context.Background()
			db, err := Open(ctx, filepath.Join(b.TempDir(), "p.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			now := time.Now()
			var seq int64
			commit := func(i int) {
				rows := make([]*fenceview.Resource, perTx)
				events := make([]fenceview.Event, perTx)
				for j := range rows {
					seq++
					id := fmt.Sprintf("resource-%d", (i*perTx+j)*7919%1024)
					rows[j] = &fenceview.Resource{ResourceID: id, LastToken: seq, Token: seq, Holder: "holder", HoldCount: 1, LeaseMs: 30000, GrantedAt: now, ExpiresAt: now}
					events[j] = fenceview.Event{Seq: seq, Type: fenceview.EventGrant, ResourceID: id, Token: seq, Holder: "holder", At: now}
				}
				if err := db.Apply(ctx, rows, events); err != nil {
					b.Fatal(err)
				}
			}
			for i := 0; i < 8192/perTx; i++ { // every resource exists, the history has some depth
				commit(i)
			}
			db.walFrames(b)
			frames := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%20 == 19 {
					frames += db.walFrames(b)
				}
				commit(i)
			}
			frames += db.walFrames(b)
			b.ReportMetric(float64(frames)/float64(b.N), "pages/commit")
		})
	}
}

// walFrames returns the frames in the WAL and checkpoints it empty.
func (db *DB) walFrames(b *testing.B) int {
	var busy, log, done int
	if err := db.write.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &done); err != nil {
		b.Fatal(err)
	}
	if _, err := db.write.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
	return log
}
