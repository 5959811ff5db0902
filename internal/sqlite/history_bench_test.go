package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/benchenv"
)

// A rejection history of FENCEVIEW_BENCH_ROWS events (default 1,000,000; the
// README's figure uses 10,000,000), a third of them rejections, over 10,000
// resources, 8 sources and 4 reasons, spread over 30 days. Built once per
// run in a temporary file.
//
//	FENCEVIEW_BENCH_ROWS=10000000 go test ./sqlite -run '^$' -bench Rejections -benchtime 200x
func BenchmarkRejections(b *testing.B) {
	rows := benchenv.Int("FENCEVIEW_BENCH_ROWS", 1_000_000)
	ctx := context.Background()
	db := historyDB(b, rows)
	start := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	day := func(d int) time.Time { return start.Add(time.Duration(d) * 24 * time.Hour) }
	filters := []struct {
		name string
		f    fenceview.RejectionFilter
	}{
		{"none", fenceview.RejectionFilter{}},
		{"resource", fenceview.RejectionFilter{ResourceID: "res-4242"}},
		{"reason", fenceview.RejectionFilter{Reason: "unissued-token"}},
		{"source", fenceview.RejectionFilter{Source: "plugin-3"}},
		{"since-until", fenceview.RejectionFilter{Since: day(10), Until: day(11)}},
		{"old-day", fenceview.RejectionFilter{Since: day(1), Until: day(2)}},
		{"resource+reason", fenceview.RejectionFilter{ResourceID: "res-4242", Reason: "stale-token"}},
		{"reason+source+since", fenceview.RejectionFilter{Reason: "scope-mismatch", Source: "plugin-5", Since: day(20)}},
		{"deep-cursor", fenceview.RejectionFilter{Before: fenceview.Cursor{At: start.Add(3 * 24 * time.Hour), Seq: int64(rows / 10)}}},
	}
	for _, fl := range filters {
		b.Run(fl.name, func(b *testing.B) {
			fl.f.Limit = 100
			lat := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				t := time.Now()
				got, err := db.Rejections(ctx, fl.f)
				if err != nil {
					b.Fatal(err)
				}
				if len(got) == 0 {
					b.Fatalf("%s: no rows", fl.name)
				}
				lat = append(lat, time.Since(t))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

func historyDB(b *testing.B, rows int) *DB {
	b.Helper()
	path := filepath.Join(b.TempDir(), "history.db")
	ctx := context.Background()
	db, err := Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	reasons := []string{"stale-token", "unissued-token", "foreign-issuer", "scope-mismatch"}
	types := []string{"grant", "accept", "reject"}
	start := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	span := int64(30 * 24 * time.Hour / time.Millisecond)
	// One big transaction through the write connection: fast to build.
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	stmt, err := tx.Prepare(`INSERT INTO events (seq, type, resource_id, token, holder, presented, required, reason, source, at)
		VALUES (?, ?, ?, ?, '', ?, ?, ?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	for i := 1; i <= rows; i++ {
		typ := types[i%3]
		reason, presented, required := "", int64(0), int64(0)
		if typ == "reject" {
			reason = reasons[(i/3)%len(reasons)]
			presented, required = int64(i), int64(i+1)
		}
		at := start + span*int64(i)/int64(rows)
		if _, err := stmt.Exec(i, typ, fmt.Sprintf("res-%d", i%10000), i, presented, required, reason,
			fmt.Sprintf("plugin-%d", (i/7)%8), at); err != nil {
			b.Fatal(err)
		}
	}
	stmt.Close()
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	// Index and count them as the commits' folds would have.
	if err := db.fold(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := db.write.ExecContext(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	return db
}
