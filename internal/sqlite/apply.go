package sqlite

import (
	"context"
	"database/sql/driver"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mattn/go-sqlite3"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/jsonstr"
)

// Apply writes resource rows and events in one durable transaction. When it
// returns nil, all of it is on disk; otherwise none of it is.
//
// It talks to the SQLite driver directly, below database/sql: the commit
// path runs two statements per change, and database/sql's argument
// conversion, result and locking per statement were most of the
// allocations of a grant.
func (db *DB) Apply(ctx context.Context, resources []*fenceview.Resource, events []fenceview.Event) error {
	db.applyMu.Lock()
	defer db.applyMu.Unlock()
	ok := false
	defer func() {
		if !ok {
			// A failed COMMIT may still have reached the disk: what was
			// last written is no longer known, so each resource's next
			// change logs its whole row or carries it (see carryRows),
			// and the next fold reads the tables (see pending).
			clear(db.logged)
			db.pend.lose()
		}
	}()
	conn, err := db.write.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		c := dc.(*sqlite3.SQLiteConn)
		st, err := db.applyStmtsOf(c)
		if err != nil {
			return err
		}
		if db.catchUp.Swap(false) {
			// Finish the background checkpoint, so that this transaction
			// can restart the WAL (see checkpoints). Only the frames
			// committed while it ran are left to copy; a failure here
			// costs a larger WAL, never a change.
			c.ExecContext(ctx, checkpointSQL, nil)
		}
		tx, err := c.BeginTx(ctx, driver.TxOptions{}) // BEGIN IMMEDIATE (dsn's _txlock)
		if err != nil {
			return err
		}
		committed := false
		defer func() {
			if !committed {
				tx.Rollback()
			}
		}()
		maxSeq := db.maxSeq
		for i := range events {
			maxSeq = max(maxSeq, events[i].Seq)
		}
		// floor is the highest seq any commit may have written, this
		// process's failed ones included (their COMMIT may have reached
		// the disk): an event carries a state only above it, and a logged
		// row records at least it, so the newest state always has the
		// highest seq.
		floor := max(db.maxSeq, db.tried)
		logSeq := max(maxSeq, floor)
		db.tried = logSeq
		rows, carry := db.carryRows(resources, events, floor)
		defer clear(carry) // no resources kept between commits
		defer clear(rows)
		seq := driver.Value(logSeq) // boxed once for every row
		if err := st.log.insert(ctx, len(rows), func(a []driver.NamedValue, i int) { logArgs(a, rows[i], seq) }); err != nil {
			return err
		}
		if err := st.events.insert(ctx, len(events), func(a []driver.NamedValue, i int) { eventArgs(a, &events[i], carry[i]) }); err != nil {
			return err
		}
		for i := range events {
			e := &events[i]
			if e.Seq <= db.folded {
				// A late event (a hole in a cluster node's copy, filled):
				// the folds have passed its place, so it is indexed and
				// counted now.
				for _, q := range lateEventSQL {
					if _, err := c.ExecContext(ctx, q, []driver.NamedValue{{Ordinal: 1, Value: e.Seq}}); err != nil {
						return err
					}
				}
			}
		}
		db.pend.add(resources, events, db.maxSeq)
		folded := db.folded
		every := db.FoldEvery
		if every <= 0 {
			every = DefaultFoldEvery
		}
		unfolded := db.unfolded + len(rows) + len(events)
		foldNow := unfolded >= every
		if foldNow {
			if err := db.foldIn(ctx, c); err != nil {
				return fmt.Errorf("fold: %w", err)
			}
			unfolded, folded = 0, maxSeq
		}
		if beforeCommit != nil {
			if err := beforeCommit(); err != nil {
				return err
			}
		}
		start := time.Now()
		if err := tx.Commit(); err != nil {
			return err
		}
		committed = true
		if db.ObserveCommit != nil {
			db.ObserveCommit(time.Since(start))
		}
		db.unfolded, db.maxSeq, db.folded = unfolded, maxSeq, folded
		if foldNow {
			db.pend.reset()
		}
		db.committed(len(rows) + len(events))
		if len(db.logged) > maxLogged {
			// Memory stays bounded; a resource forgotten logs its whole
			// row at its next change, and is remembered again.
			clear(db.logged)
		}
		for _, r := range resources {
			db.logged[r.ResourceID] = keyOf(r)
		}
		ok = true
		return nil
	})
}

// pending is what the next fold writes, gathered in memory from the
// commits since the last one: each changed resource's newest row, and the
// events' counts per minute. A fold from it writes them straight into
// resources and event_minutes, where foldSQL finds them again among the
// log's rows, the states the events carry and the events themselves: a
// query over every change since the last fold, most of a fold's time.
//
// It is trusted only while every commit since the last fold succeeded in
// this process with rising seqs. A failed COMMIT may still have reached
// the disk, and a late event (a hole in a cluster node's copy, filled)
// is counted by Apply itself; either way the next fold reads the tables
// (lost), as a fold after a restart does.
type pending struct {
	lost    bool
	rows    map[string]fenceview.Resource
	minutes map[minuteKey]int64
}

// minuteKey is a row of event_minutes.
type minuteKey struct {
	minute      int64
	typ, reason string
}

// add gathers a commit's resources (a later copy of one is newer) and
// events, unless an event is not above after, the highest seq written.
func (p *pending) add(resources []*fenceview.Resource, events []fenceview.Event, after int64) {
	if p.lost {
		return
	}
	for i := range events {
		if events[i].Seq <= after {
			p.lose()
			return
		}
	}
	if p.rows == nil {
		p.rows, p.minutes = map[string]fenceview.Resource{}, map[minuteKey]int64{}
	}
	for _, r := range resources {
		p.rows[r.ResourceID] = *r
	}
	for i := range events {
		e := &events[i]
		k := minuteKey{minute: e.At.UnixMilli() / 60000, typ: e.Type}
		if e.Type == fenceview.EventReject {
			k.reason = e.Reason
		}
		p.minutes[k]++
	}
}

// lose stops trusting p until the next fold.
func (p *pending) lose() {
	p.lost = true
	clear(p.rows)
	clear(p.minutes)
}

// reset starts p again after a fold: nothing is pending. Its maps hold
// at most one entry per row a fold comes after (FoldEvery).
func (p *pending) reset() {
	p.lost = false
	clear(p.rows)
	clear(p.minutes)
}

// foldFromTables, in tests, folds as the code before pending did;
// beforeCommit, when it fails, fails Apply's transaction just before
// its COMMIT.
var (
	foldFromTables = false
	beforeCommit   func() error
)

// foldIn folds inside the commit's transaction on c: from pending when
// it can be trusted, else from the tables (foldSQL).
func (db *DB) foldIn(ctx context.Context, c *sqlite3.SQLiteConn) error {
	if db.pend.lost || foldFromTables {
		_, err := c.ExecContext(ctx, foldSQL, nil)
		return err
	}
	ids := make([]string, 0, len(db.pend.rows))
	for id := range db.pend.rows {
		ids = append(ids, id)
	}
	slices.Sort(ids) // in the B-tree's order, as foldSQL writes them
	up, err := prepareMultiInsert(c, "resources", resourceColumns, resourceWidth-1, foldUpsert)
	if err != nil {
		return err
	}
	defer up.close()
	err = up.insert(ctx, len(ids), func(a []driver.NamedValue, i int) {
		r := db.pend.rows[ids[i]]
		resourceArgs(a, &r)
	})
	if err != nil {
		return err
	}
	if _, err := c.ExecContext(ctx, foldIndexSQL, nil); err != nil {
		return err
	}
	if len(db.pend.minutes) > 0 {
		stmt, err := c.Prepare(`INSERT INTO event_minutes (minute, type, reason, n) VALUES (?, ?, ?, ?) ` + minutesUpsert)
		if err != nil {
			return err
		}
		defer stmt.Close()
		a := namedValues(4)
		for k, n := range db.pend.minutes {
			a[0].Value, a[1].Value, a[2].Value, a[3].Value = k.minute, k.typ, k.reason, n
			if err := run(ctx, stmt.(driver.StmtQueryContext), a); err != nil {
				return err
			}
		}
	}
	_, err = c.ExecContext(ctx, foldMarkSQL, nil)
	return err
}

// maxLogged bounds the resources carryRows remembers (about 280 bytes
// each, some 18 MiB): those written most recently, and so the ones most
// likely fenced again soon.
var maxLogged = 1 << 16 // a variable for tests

// rowKey is what a resource row holds beside the fields a fence changes
// (the mark, the last token, the counters, the last rejection, the alarm),
// as written.
type rowKey struct {
	holder, owner, value, readers                                  string
	holdCount, permits                                             int
	token, leaseMs, lockDelayMs, grantedAt, expiresAt, availableAt int64
	election                                                       bool
}

func keyOf(r *fenceview.Resource) rowKey {
	return rowKey{holder: r.Holder, owner: r.OwnerKey, value: r.Value, readers: encodeReaders(r), holdCount: r.HoldCount, permits: r.Permits,
		token: r.Token, leaseMs: r.LeaseMs, lockDelayMs: r.LockDelayMs,
		grantedAt: msKey(r.GrantedAt), expiresAt: msKey(r.ExpiresAt), availableAt: msKey(r.AvailableAt), election: r.Election}
}

// msKey is t as written (Unix milliseconds), math.MinInt64 for none.
func msKey(t time.Time) int64 {
	if t.IsZero() {
		return math.MinInt64
	}
	return t.UnixMilli()
}

// carried is the state an event carries for its resource (see carryRows):
// r's whole row, or only what a fence changes; none when r is nil.
type carried struct {
	r     *fenceview.Resource
	whole bool
}

// carryRows splits a commit's resources into the rows to append to
// resource_log and the states its events carry instead (carry[i], for
// events[i]), so that a change with an event on its resource (a grant, a
// renewal, a release, a fenced write, an expiry...) appends one row where
// there were two. A resource's state goes with the commit's newest event
// on it above floor: only what a fence changes (the mark, the last token,
// the counters, the last rejection, the alarm) when everything else is as
// last written (in this process: db.logged), compared exactly; otherwise
// its whole row, unless a string in it would not come back from JSON
// exactly (invalid UTF-8, a NUL). A resource with no such event, or with
// such a string, logs its row. Readers and the fold take the newest of the
// three (see newestCTE).
func (db *DB) carryRows(resources []*fenceview.Resource, events []fenceview.Event, floor int64) (rows []*fenceview.Resource, carry []carried) {
	rows, carry = db.rowsBuf[:0], db.carryBuf[:0]
	for range events {
		carry = append(carry, carried{})
	}
	clear(db.eventAt)
	for i := range events {
		e := &events[i]
		if e.Seq <= floor {
			continue // a late event: older states may have followed it
		}
		if writeOld && e.Type != fenceview.EventAccept && e.Type != fenceview.EventReject {
			continue
		}
		if j, ok := db.eventAt[e.ResourceID]; !ok || events[j].Seq < e.Seq {
			db.eventAt[e.ResourceID] = i
		}
	}
	for _, r := range resources {
		i, ok := db.eventAt[r.ResourceID]
		// A resource's first copy only: a later copy in the same commit
		// (newer, where a caller passes several) is logged, and a logged
		// row is as new as any event of its commit.
		delete(db.eventAt, r.ResourceID)
		switch k, known := db.logged[r.ResourceID]; {
		case !ok:
			rows = append(rows, r)
		case known && k == keyOf(r):
			carry[i] = carried{r: r}
		case !writeOld && exactInJSON(r.Holder) && exactInJSON(r.OwnerKey) && exactInJSON(r.Value):
			carry[i] = carried{r: r, whole: true}
		default:
			rows = append(rows, r)
		}
	}
	db.rowsBuf, db.carryBuf = rows, carry
	return rows, carry
}

// writeOld, in tests, writes as the code before migration 0011 did: a
// state carried only by a fence's event, and only what a fence changes.
var writeOld = false

// exactInJSON reports whether s comes back from a JSON string unchanged:
// valid UTF-8 without a NUL.
func exactInJSON(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// lateEventSQL indexes and counts one event (seq ?1) whose place the
// folds have passed, as a fold would have.
var lateEventSQL = [...]string{
	`INSERT OR IGNORE INTO resource_events (resource_id, seq) SELECT resource_id, seq FROM events WHERE seq = ?1`,
	`INSERT INTO event_minutes (minute, type, reason, n)
		SELECT at / 60000, type, CASE WHEN type = 'reject' THEN reason ELSE '' END, 1 FROM events WHERE seq = ?1
	ON CONFLICT (minute, type, reason) DO UPDATE SET n = n + 1`,
}

// applyStmts are Apply's statements, prepared once on the write
// connection, with their argument slices reused from change to change.
type applyStmts struct {
	conn        *sqlite3.SQLiteConn
	log, events multiInsert
}

// chunkRows are the row counts of the INSERT statements a table's rows go
// through, largest first: a group of 37 rows takes two statements of 16,
// one of 4 and one of 1. One statement per chunk, not per row, is one cgo
// crossing and one VDBE program start for up to 16 rows, and the largest
// chunk's arguments (16 x 19) stay far below SQLite's limit on them.
var chunkRows = [...]int{16, 4, 1}

// multiInsert inserts rows into one table through a multi-row INSERT per
// chunk (see chunkRows).
//
// The statements run through the driver's query path, not its exec path:
// a query resets, binds every argument and takes the first step in one
// cgo crossing, where an exec crosses once per argument. An INSERT's work
// is done by that first step; closing the rows resets the statement.
type multiInsert struct {
	columns int
	stmts   [len(chunkRows)]driver.StmtQueryContext
	closers [len(chunkRows)]func() error
	args    [len(chunkRows)][]driver.NamedValue
}

// prepareMultiInsert prepares the INSERTs of n columns into table, each
// followed by suffix (an upsert clause, or nothing).
func prepareMultiInsert(c *sqlite3.SQLiteConn, table, columns string, n int, suffix string) (multiInsert, error) {
	m := multiInsert{columns: n}
	row := "(" + strings.Repeat("?, ", n-1) + "?)"
	for i, rows := range chunkRows {
		q := "INSERT INTO " + table + " (" + columns + ") VALUES " + strings.Repeat(row+", ", rows-1) + row + " " + suffix
		stmt, err := c.Prepare(q)
		if err != nil {
			m.close()
			return multiInsert{}, err
		}
		m.stmts[i], m.closers[i], m.args[i] = stmt.(driver.StmtQueryContext), stmt.Close, namedValues(rows*n)
	}
	return m, nil
}

// insert inserts n rows, fill setting row i's arguments in a.
func (m *multiInsert) insert(ctx context.Context, n int, fill func(a []driver.NamedValue, i int)) error {
	for i := 0; i < n; {
		c := 0
		for chunkRows[c] > n-i {
			c++
		}
		a := m.args[c]
		for j := 0; j < chunkRows[c]; j++ {
			fill(a[j*m.columns:(j+1)*m.columns], i+j)
		}
		err := run(ctx, m.stmts[c], a)
		forget(a)
		if err != nil {
			return err
		}
		i += chunkRows[c]
	}
	return nil
}

func (m *multiInsert) close() {
	for _, c := range m.closers {
		if c != nil {
			c()
		}
	}
}

// resourceWidth and eventWidth are how many columns a resource_log row
// and an events row have: the arguments of one row of their INSERTs.
const resourceWidth, eventWidth = 21, 16

// applyStmtsOf returns the statements prepared on c, preparing them again
// if database/sql replaced the connection since.
func (db *DB) applyStmtsOf(c *sqlite3.SQLiteConn) (*applyStmts, error) {
	if db.stmts != nil && db.stmts.conn == c {
		return db.stmts, nil
	}
	db.stmts.close()
	db.stmts = nil
	// Checkpoints run in the background (see checkpoints), not inside
	// this connection's commits.
	if _, err := c.ExecContext(context.Background(), `PRAGMA wal_autocheckpoint = 0`, nil); err != nil {
		return nil, err
	}
	log, err := prepareMultiInsert(c, "resource_log", resourceColumns+", seq", resourceWidth, "")
	if err != nil {
		return nil, err
	}
	events, err := prepareMultiInsert(c, "events", eventColumns+", resource_state, resource_row", eventWidth, "")
	if err != nil {
		log.close()
		return nil, err
	}
	db.stmts = &applyStmts{conn: c, log: log, events: events}
	return db.stmts, nil
}

func (st *applyStmts) close() {
	if st != nil {
		st.log.close()
		st.events.close()
	}
}

func namedValues(n int) []driver.NamedValue {
	v := make([]driver.NamedValue, n)
	for i := range v {
		v[i].Ordinal = i + 1
	}
	return v
}

// forget drops the values of args, keeping their ordinals: the reused
// slices hold no strings between commits.
func forget(args []driver.NamedValue) {
	for i := range args {
		args[i].Value = nil
	}
}

// logArgs sets a (resourceWidth values, in resourceColumns' order and
// seq) to r, logged when the last event was seq.
func logArgs(a []driver.NamedValue, r *fenceview.Resource, seq driver.Value) {
	resourceArgs(a, r)
	a[20].Value = seq
}

// resourceArgs sets a (resourceWidth-1 values, in resourceColumns' order)
// to r.
func resourceArgs(a []driver.NamedValue, r *fenceview.Resource) {
	var holder driver.Value
	if r.Holder != "" {
		holder = r.Holder
	}
	a[0].Value, a[1].Value, a[2].Value, a[3].Value = r.ResourceID, r.LastToken, r.HighWaterMark, holder
	a[4].Value, a[5].Value, a[6].Value = int64(r.HoldCount), r.Token, r.LeaseMs
	a[7].Value, a[8].Value = toMs(r.GrantedAt), toMs(r.ExpiresAt)
	a[9].Value, a[10].Value, a[11].Value = r.Accepted, r.Rejected, toMs(r.LastRejectionAt)
	a[12].Value, a[13].Value = r.CounterAlarm, r.OwnerKey
	a[14].Value, a[15].Value, a[16].Value = r.LockDelayMs, toMs(r.AvailableAt), int64(r.Permits)
	a[17].Value, a[18].Value = r.Election, r.Value
	a[19].Value = encodeReaders(r)
}

// eventArgs sets a (eventWidth values, in eventColumns' order and the
// state columns) to e, with the state it carries, if any.
func eventArgs(a []driver.NamedValue, e *fenceview.Event, c carried) {
	a[0].Value, a[1].Value, a[2].Value, a[3].Value = e.Seq, eventType(e.Type), e.ResourceID, e.Token
	a[4].Value, a[5].Value, a[6].Value = e.Holder, e.Presented, e.Required
	a[7].Value, a[8].Value, a[9].Value = e.Reason, e.Source, e.At.UnixMilli()
	a[10].Value, a[11].Value, a[12].Value = e.Value, e.LockDelayMs, int64(e.Permits)
	a[13].Value = eventAccess(e.Access)
	switch {
	case c.r == nil: // NULL, NULL: forget left them so
	case c.whole:
		a[15].Value = resourceRow(c.r, e)
	default:
		a[14].Value = resourceState(c.r)
	}
}

// accessRead is the access of a read, boxed once.
var accessRead, accessNone driver.Value = fenceview.AccessRead, ""

// eventAccess is an event's access as a bound argument, without an
// allocation per row.
func eventAccess(a string) driver.Value {
	if a == fenceview.AccessRead {
		return accessRead
	}
	return accessNone
}

// eventTypes are the event types, each boxed once: a type boxed per
// event would be an allocation per row.
var eventTypes = [...]driver.Value{fenceview.EventGrant, fenceview.EventRelease, fenceview.EventAccept,
	fenceview.EventRenew, fenceview.EventExpire, fenceview.EventReject, fenceview.EventAlarm,
	fenceview.EventReset, fenceview.EventRecover}

// eventType returns typ as a bound argument.
func eventType(typ string) driver.Value {
	for _, v := range eventTypes {
		if v.(string) == typ {
			return v
		}
	}
	return typ
}

// resourceState is what a fence changes on r, as events' resource_state
// (see migration 0010).
func resourceState(r *fenceview.Resource) string {
	b := make([]byte, 0, 64)
	b = append(b, '[')
	for i, v := range [...]int64{r.HighWaterMark, r.LastToken, r.Accepted, r.Rejected, r.LastRejectionAt.UnixMilli(), r.CounterAlarm} {
		if i > 0 {
			b = append(b, ',')
		}
		if i == 4 && r.LastRejectionAt.IsZero() {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendInt(b, v, 10)
	}
	return string(append(b, ']'))
}

// resourceRow is r's whole row, as events' resource_row for e (see
// migration 0011), its elements in the order carriedRowColumns reads them:
//
//	[last token, grant token, holder, hold count, lease ms, granted at,
//	 expires at, mark, accepted, rejected, last rejection, counter alarm,
//	 owner, lock-delay ms, available at, permits, election, value, readers]
//
// Times are milliseconds after e's (null for none); the holder is null
// for none and 1 (a number, never a holder) for e's own holder, as a
// grant's or a renewal's is; the elements after the last one not at its
// default (0, "", null) are left out: a lock's row ends at its expiry or
// its counters.
func resourceRow(r *fenceview.Resource, e *fenceview.Event) string {
	at := e.At.UnixMilli()
	w := rowWriter{b: make([]byte, 1, 96)}
	w.b[0] = '['
	w.int(r.LastToken)
	w.int(r.Token)
	if r.Holder != "" && r.Holder == e.Holder {
		w.int(1)
	} else {
		w.str(r.Holder, true)
	}
	w.int(int64(r.HoldCount))
	w.int(r.LeaseMs)
	w.time(r.GrantedAt, at)
	w.time(r.ExpiresAt, at)
	w.int(r.HighWaterMark)
	w.int(r.Accepted)
	w.int(r.Rejected)
	w.time(r.LastRejectionAt, at)
	w.int(r.CounterAlarm)
	w.str(r.OwnerKey, false)
	w.int(r.LockDelayMs)
	w.time(r.AvailableAt, at)
	w.int(int64(r.Permits))
	election := int64(0)
	if r.Election {
		election = 1
	}
	w.int(election)
	w.str(r.Value, false)
	w.str(encodeReaders(r), false)
	return string(append(w.b[:w.end], ']'))
}

// rowWriter writes resourceRow's JSON array; end is b's length after the
// last element not at its default.
type rowWriter struct {
	b   []byte
	end int
}

func (w *rowWriter) sep() {
	if len(w.b) > 1 {
		w.b = append(w.b, ',')
	}
}

func (w *rowWriter) int(v int64) {
	w.sep()
	w.b = strconv.AppendInt(w.b, v, 10)
	if v != 0 {
		w.end = len(w.b)
	}
}

func (w *rowWriter) time(t time.Time, at int64) {
	w.sep()
	if t.IsZero() {
		w.b = append(w.b, "null"...)
		return
	}
	w.b = strconv.AppendInt(w.b, t.UnixMilli()-at, 10)
	w.end = len(w.b)
}

// str writes s; "" as null when null is set (the holder), as "" otherwise.
func (w *rowWriter) str(s string, null bool) {
	w.sep()
	switch {
	case s != "":
		w.b = jsonstr.Append(w.b, s)
		w.end = len(w.b)
	case null:
		w.b = append(w.b, "null"...)
	default:
		w.b = append(w.b, `""`...)
	}
}

// run executes an INSERT through the query path (see multiInsert).
func run(ctx context.Context, stmt driver.StmtQueryContext, args []driver.NamedValue) error {
	rows, err := stmt.QueryContext(ctx, args)
	if err != nil {
		return err
	}
	return rows.Close()
}
