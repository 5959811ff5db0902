package sqlite

import (
	"context"
	"os"
	"testing"

	"github.com/fenceview/fenceview/internal/benchenv"
)

// BenchmarkHistoryGrowth measures the database file's size per recorded
// event (rows and their indexes), for capacity planning in
// docs/operations.md: the history of BenchmarkRejections, checkpointed.
//
//	FENCEVIEW_BENCH_ROWS=1000000 go test ./sqlite -run '^$' -bench HistoryGrowth -benchtime 1x
func BenchmarkHistoryGrowth(b *testing.B) {
	rows := benchenv.Int("FENCEVIEW_BENCH_ROWS", 200_000)
	for i := 0; i < b.N; i++ {
		db := historyDB(b, rows)
		if _, err := db.write.ExecContext(context.Background(), `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			b.Fatal(err)
		}
		st, err := os.Stat(db.Path)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(st.Size())/float64(rows), "bytes/event")
		b.ReportMetric(float64(st.Size())/float64(rows)*1e6/(1<<20), "MiB/million-events")
	}
}
