package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/fenceview/fenceview"
)

type minuteKey struct {
	minute      int64
	typ, reason string
}

// countMinutes adds events to the per-minute counts, in the transaction
// that records them. A group commit's events mostly share a minute, so
// this is a few upserts per commit.
func countMinutes(ctx context.Context, tx *sql.Tx, events []fenceview.Event) error {
	if len(events) == 0 {
		return nil
	}
	counts := map[minuteKey]int64{}
	for _, e := range events {
		k := minuteKey{minute: e.At.UnixMilli() / 60000, typ: e.Type}
		if e.Type == "reject" {
			k.reason = e.Reason
		}
		counts[k]++
	}
	for k, n := range counts {
		if _, err := tx.ExecContext(ctx, `INSERT INTO event_minutes (minute, type, reason, n) VALUES (?, ?, ?, ?)
			ON CONFLICT (minute, type, reason) DO UPDATE SET n = n + excluded.n`, k.minute, k.typ, k.reason, n); err != nil {
			return err
		}
	}
	return nil
}

// MinuteCount is how many events of a type (and, for rejections, a
// reason) were recorded in one minute.
type MinuteCount struct {
	Minute time.Time
	Type   string
	Reason string
	N      int64
}

// MinuteCounts returns the per-minute counts from since (inclusive) to
// until (exclusive), oldest first.
func (db *DB) MinuteCounts(ctx context.Context, since, until time.Time) ([]MinuteCount, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT minute, type, reason, n FROM event_minutes
		WHERE minute >= ? AND minute < ? ORDER BY minute`, since.UnixMilli()/60000, (until.UnixMilli()+59999)/60000)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []MinuteCount
	for rows.Next() {
		var c MinuteCount
		var m int64
		if err := rows.Scan(&m, &c.Type, &c.Reason, &c.N); err != nil {
			return nil, err
		}
		c.Minute = time.UnixMilli(m * 60000).UTC()
		out = append(out, c)
	}
	return out, rows.Err()
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

// RejectionReasons returns every reason rejections were recorded with and
// their counts, most frequent first, from the per-minute counts.
func (db *DB) RejectionReasons(ctx context.Context) ([]string, []int64, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT reason, SUM(n) FROM event_minutes WHERE type = 'reject'
		GROUP BY reason ORDER BY 2 DESC, 1`)
	if err != nil {
		return nil, nil, err
	}
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
