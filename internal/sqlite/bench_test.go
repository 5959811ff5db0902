package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
)

// One durable transaction with one resource row and one event: the cost of
// a change when nothing is batched.
//
//	go test ./sqlite -run '^$' -bench Apply
func BenchmarkApply(b *testing.B) {
	for _, perTx := range []int{1, 64} {
		b.Run(fmt.Sprintf("changes=%d", perTx), func(b *testing.B) {
			ctx := context.Background()
			db, err := Open(ctx, filepath.Join(b.TempDir(), "b.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			now := time.Now()
			var seq int64
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				rows := make([]*fenceview.Resource, perTx)
				events := make([]fenceview.Event, perTx)
				for j := range rows {
					seq++
					rows[j] = &fenceview.Resource{ResourceID: fmt.Sprintf("r-%d", (i*perTx+j)%1024), LastToken: seq, Holder: "h", HoldCount: 1, ExpiresAt: now}
					events[j] = fenceview.Event{Seq: seq, Type: fenceview.EventGrant, ResourceID: rows[j].ResourceID, Token: seq, Holder: "h", At: now}
				}
				if err := db.Apply(ctx, rows, events); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*perTx)/b.Elapsed().Seconds(), "changes/s")
			// The process's CPU, the kernel's share of the writes and
			// fsyncs included: what a commit costs a busy server.
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N*perTx), "cpu-us/change")
		})
	}
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
