package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/fenceview/fenceview"
)

// MinuteCounts returns the per-minute counts from since (inclusive) to
// until (exclusive), oldest first.
func (db *DB) MinuteCounts(ctx context.Context, since, until time.Time) ([]fenceview.MinuteCount, error) {
	// The folded counts, plus the events since the last fold counted now.
	rows, err := db.read.QueryContext(ctx, `SELECT minute, type, reason, SUM(n) FROM (
			SELECT minute, type, reason, n FROM event_minutes WHERE minute >= ?1 AND minute < ?2
			UNION ALL
			SELECT at / 60000, type, CASE WHEN type = 'reject' THEN reason ELSE '' END, COUNT(*) FROM events
			WHERE seq > `+foldedSeq+` AND at >= ?1 * 60000 AND at < ?2 * 60000 GROUP BY 1, 2, 3)
		GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`, since.UnixMilli()/60000, (until.UnixMilli()+59999)/60000)
	return collect(rows, err, func(rows *sql.Rows) (fenceview.MinuteCount, error) {
		var c fenceview.MinuteCount
		var m int64
		err := rows.Scan(&m, &c.Type, &c.Reason, &c.N)
		c.Minute = time.UnixMilli(m * 60000).UTC()
		return c, err
	})
}

// RejectionSources returns the sources of rejections with their counts,
// most frequent first, at most limit of them: the choice list of the
// dashboard's filter. It reads the source index, one entry per rejection.
func (db *DB) RejectionSources(ctx context.Context, limit int) ([]string, []int64, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT source, COUNT(*) FROM events INDEXED BY rejections_source_at_seq
		WHERE type = 'reject' GROUP BY source ORDER BY 2 DESC, 1 LIMIT ?`, limit)
	if err != nil {
		return nil, nil, err
	}
	return scanCounts(rows)
}

// RejectionReasons returns every reason rejections were recorded with and
// their counts, most frequent first, from the per-minute counts.
func (db *DB) RejectionReasons(ctx context.Context) ([]string, []int64, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT reason, SUM(n) FROM (
			SELECT reason, n FROM event_minutes WHERE type = 'reject'
			UNION ALL
			SELECT reason, 1 FROM events WHERE seq > `+foldedSeq+` AND type = 'reject')
		GROUP BY reason ORDER BY 2 DESC, 1`)
	if err != nil {
		return nil, nil, err
	}
	return scanCounts(rows)
}

// scanCounts reads rows of (name, count) and closes them.
func scanCounts(rows *sql.Rows) ([]string, []int64, error) {
	defer rows.Close()
	var names []string
	var counts []int64
	for rows.Next() {
		var s string
		var n int64
		if err := rows.Scan(&s, &n); err != nil {
			return nil, nil, err
		}
		names, counts = append(names, s), append(counts, n)
	}
	return names, counts, rows.Err()
}
