package sqlite

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/benchenv"
)

// One durable transaction with one resource row and one event: the cost of
// a change when nothing is batched.
//
//	go test ./sqlite -run '^$' -bench Apply
func BenchmarkApply(b *testing.B) {
	for _, perTx := range []int{1, 64} {
		b.Run(fmt.Sprintf("changes=%d", perTx), func(b *testing.B) {
			g := newGrantLoad(b, perTx, func(n int) string { return fmt.Sprintf("r-%d", n%1024) })
			b.ResetTimer()
			cpu0 := benchenv.CPUTime()
			for i := 0; i < b.N; i++ {
				g.commit(b, i)
			}
			b.ReportMetric(float64(b.N*perTx)/b.Elapsed().Seconds(), "changes/s")
			// The process's CPU, the kernel's share of the writes and
			// fsyncs included: what a commit costs a busy server.
			b.ReportMetric(float64((benchenv.CPUTime()-cpu0).Microseconds())/float64(b.N*perTx), "cpu-us/change")
		})
	}
}

// The fold of 8,192 grants over 1,024 resources, from what the commits
// since the last fold gathered (pending) or read back from the tables
// (foldSQL, as after a restart or a failed commit): the CPU of the one
// commit that folds, less that of the commit before it.
//
//	go test ./internal/sqlite -run '^$' -bench Fold -benchtime 20x
func BenchmarkFold(b *testing.B) {
	const perTx, every = 64, 8192
	for _, tables := range []bool{false, true} {
		b.Run(fmt.Sprintf("from=%s", map[bool]string{false: "pending", true: "tables"}[tables]), func(b *testing.B) {
			defer func() { foldFromTables = false }()
			foldFromTables = tables
			g := newGrantLoad(b, perTx, func(n int) string { return fmt.Sprintf("r-%d", n%1024) })
			g.db.FoldEvery = every
			var folding, plain time.Duration
			tx := 0
			for range b.N {
				for range every/perTx - 2 {
					g.commit(b, tx)
					tx++
				}
				cpu0 := benchenv.CPUTime()
				g.commit(b, tx) // the last commit before the fold
				cpu1 := benchenv.CPUTime()
				g.commit(b, tx+1) // folds
				cpu2 := benchenv.CPUTime()
				tx += 2
				if g.db.unfolded != 0 {
					b.Fatalf("no fold: %d rows unfolded", g.db.unfolded)
				}
				plain += cpu1 - cpu0
				folding += cpu2 - cpu1
			}
			b.ReportMetric(float64((folding-plain).Microseconds())/float64(b.N), "fold-cpu-us")
		})
	}
}

// grantLoad commits grants in durable transactions of perTx each, tokens
// rising from 1; id names the resource of the n-th grant.
type grantLoad struct {
	db    *DB
	perTx int
	id    func(n int) string
	now   time.Time
	seq   int64
}

func newGrantLoad(b *testing.B, perTx int, id func(n int) string) *grantLoad {
	return &grantLoad{db: openTemp(b), perTx: perTx, id: id, now: time.Now()}
}

// commit applies the i-th transaction: its rows, each a grant of token
// LastToken, with their grant events (seq LastToken).
func (g *grantLoad) commit(b *testing.B, i int) {
	rows := make([]*fenceview.Resource, g.perTx)
	events := make([]fenceview.Event, g.perTx)
	for j := range rows {
		g.seq++
		r := &fenceview.Resource{ResourceID: g.id(i*g.perTx + j), LastToken: g.seq, Token: g.seq, Holder: "holder", HoldCount: 1, LeaseMs: 30000, GrantedAt: g.now, ExpiresAt: g.now}
		rows[j] = r
		events[j] = fenceview.Event{Seq: r.LastToken, Type: fenceview.EventGrant, ResourceID: r.ResourceID, Token: r.LastToken, Holder: r.Holder, At: g.now}
	}
	if err := g.db.Apply(context.Background(), rows, events); err != nil {
		b.Fatal(err)
	}
}

// WAL frames (pages written) per durable commit of one grant: one existing
// resource changed, its grant event appended carrying the new row. Every frame is a page the
// fsync has to carry, and B-tree work on the write path; the count does not
// depend on the machine's load, unlike the time.
//
//	go test ./sqlite -run '^$' -bench Pages -benchmem
func BenchmarkApplyPages(b *testing.B) {
	// 1: one client, every change its own commit; 32: a group commit at
	// 64 clients, changes spread over the resources.
	for _, perTx := range []int{1, 32} {
		b.Run(fmt.Sprintf("changes=%d", perTx), func(b *testing.B) {
			g := newGrantLoad(b, perTx, func(n int) string { return fmt.Sprintf("resource-%d", n*7919%1024) })
			frames := pagesPerCommit(b, g.db, perTx, g.commit)
			b.ReportMetric(float64(frames)/float64(b.N), "pages/commit")
		})
	}
}

// pagesPerCommit commits until every resource exists and the history has
// some depth, then times b.N commits and returns the WAL frames they
// wrote, counted every 20 commits (and checkpointed, as the server does).
func pagesPerCommit(b *testing.B, db *DB, perTx int, commit func(b *testing.B, i int)) (frames int) {
	for i := 0; i < 8192/perTx; i++ {
		commit(b, i)
	}
	db.walFrames(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%20 == 19 {
			frames += db.walFrames(b)
		}
		commit(b, i)
	}
	return frames + db.walFrames(b)
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
	ctx := context.Background()
	db := openTemp(b)
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

// A holder page's history when the holder has no events among the newest
// 20,000 (the dashboard's window): the worst case, a read of the whole
// window, whatever the history's size.
//
//	go test ./sqlite -run '^$' -bench HolderEvents -benchtime 200x
func BenchmarkHolderEvents(b *testing.B) {
	db := historyDB(b, 200_000)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		got, err := db.HolderEvents(ctx, "nobody", nil, 20_000, 50)
		if err != nil || len(got) != 0 {
			b.Fatal(got, err)
		}
	}
}

// WAL frames (pages written) and bytes per durable commit of fenced writes:
// each change an accepted fence on an existing resource (the mark and the
// accepted count move, nothing else) and its accept event. Like
// ApplyPages, the counts do not depend on the machine's load.
//
//	go test ./internal/sqlite -run '^$' -bench FencePages -benchmem
func BenchmarkApplyFencePages(b *testing.B) {
	for _, perTx := range []int{1, 32} {
		b.Run(fmt.Sprintf("changes=%d", perTx), func(b *testing.B) {
			f := newFenceLoad(b, perTx)
			b.ReportAllocs()
			frames := pagesPerCommit(b, f.db, perTx, f.commit)
			b.ReportMetric(float64(frames)/float64(b.N), "pages/commit")
			b.ReportMetric(float64(frames)/float64(b.N*perTx), "pages/fence")
		})
	}
}

// fenceLoad commits accepted fences in durable transactions of perTx
// each, over 1,024 resources first granted once.
type fenceLoad struct {
	db    *DB
	perTx int
	now   time.Time
	seq   int64
	res   map[string]fenceview.Resource
}

func newFenceLoad(b *testing.B, perTx int) *fenceLoad {
	f := &fenceLoad{db: openTemp(b), perTx: perTx, now: time.Now(), res: map[string]fenceview.Resource{}}
	var rows []*fenceview.Resource
	var events []fenceview.Event
	for n := 0; n < 1024; n++ {
		f.seq++
		r := fenceview.Resource{ResourceID: fmt.Sprintf("resource-%d", n), LastToken: 1, Token: 1, Holder: "holder", HoldCount: 1, LeaseMs: 30000, GrantedAt: f.now, ExpiresAt: f.now}
		f.res[r.ResourceID] = r
		rows = append(rows, &r)
		events = append(events, fenceview.Event{Seq: f.seq, Type: fenceview.EventGrant, ResourceID: r.ResourceID, Token: 1, Holder: r.Holder, At: f.now})
	}
	if err := f.db.Apply(context.Background(), rows, events); err != nil {
		b.Fatal(err)
	}
	return f
}

func (f *fenceLoad) commit(b *testing.B, i int) {
	rows := make([]*fenceview.Resource, f.perTx)
	events := make([]fenceview.Event, f.perTx)
	for j := range rows {
		f.seq++
		id := fmt.Sprintf("resource-%d", (i*f.perTx+j)*7919%1024)
		r := f.res[id]
		r.Accepted++
		r.HighWaterMark = 1
		f.res[id] = r
		rows[j] = &r
		events[j] = fenceview.Event{Seq: f.seq, Type: fenceview.EventAccept, ResourceID: id, Token: 1, Holder: "holder", Source: "guard-1", At: f.now}
	}
	if err := f.db.Apply(context.Background(), rows, events); err != nil {
		b.Fatal(err)
	}
}
