package sqlite

import (
	"context"
	"os"
	"strconv"
	"testing"
)

// BenchmarkHistoryGrowth measures the database file's size per recorded
// event (rows and their indexes), for capacity planning in
// docs/operations.md: the history of BenchmarkRejections, checkpointed.
//
//	FENCEVIEW_BENCH_ROWS=1000000 go test ./sqlite -run '^$' -bench HistoryGrowth -benchtime 1x
func BenchmarkHistoryGrowth(b *testing.B) {
	rows := 200_000
	if v := os.Getenv("FENCEVIEW_BENCH_ROWS"); v != "" {
		rows, _ = strconv.Atoi(v)
	}
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
