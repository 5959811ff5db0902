package sqlguard

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/fenceview/fenceview/guard"
)

// Marks keeps high-water marks by resource id in a table of their own,
// for resources that have no row to carry a token column: a downstream
// service's endpoints (the HTTP guard), calls to unfenceable externals, a
// directory of files. It is the durable twin of guard.Guard: the same rule,
// the same decisions, surviving restarts and shared by every process that
// uses the database.
//
// The table has two columns, resource_id (text, primary key) and high_water
// (BIGINT); CreateTable makes it. A Marks is safe for concurrent use.
type Marks struct {
	db      DB
	d       Dialect
	name    string
	table   string
	idCol   string
	markCol string

	verify *guard.VerifyCache // signed mode (signed.go); nil otherwise
}

// NewMarks returns marks kept in table (a plain or schema-qualified
// identifier) on db.
func NewMarks(db DB, d Dialect, table string) (*Marks, error) {
	if !d.valid() {
		return nil, fmt.Errorf("%w: unknown dialect %v", ErrInvalid, d)
	}
	if db == nil {
		return nil, fmt.Errorf("%w: nil database", ErrInvalid)
	}
	q, err := d.quoteIdent(table, true)
	if err != nil {
		return nil, err
	}
	return &Marks{db: db, d: d, name: table, table: q, idCol: d.quote("resource_id"), markCol: d.quote("high_water")}, nil
}

// On returns the same marks used through db, typically a *sql.Tx, so that
// recording a token commits or rolls back with the write it fences.
func (m *Marks) On(db DB) *Marks {
	c := *m
	c.db = db
	return &c
}

// CreateTable creates the marks table if it does not exist.
//
// On MySQL the id column is VARBINARY(160): ids compare byte by byte, as
// everywhere else in fenceview. A VARCHAR's usual collations would make
// "Inventory" and "inventory ", two resources, share one mark.
func (m *Marks) CreateTable(ctx context.Context) error {
	idType := fmt.Sprintf("VARCHAR(%d)", guard.MaxResourceIDLen)
	if m.d == MySQL {
		idType = fmt.Sprintf("VARBINARY(%d)", guard.MaxResourceIDLen)
	}
	q := fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (%s %s PRIMARY KEY, %s BIGINT NOT NULL)`,
		m.table, m.idCol, idType, m.markCol)
	if _, err := m.db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("sqlguard: create %s: %w", m.name, err)
	}
	return nil
}

// Check is CheckContext without a context, so Marks can stand wherever a
// *guard.Guard does.
func (m *Marks) Check(resourceID string, token int64) (guard.Decision, error) {
	return m.CheckContext(context.Background(), resourceID, token)
}

// CheckContext presents token for resourceID: accepted (and recorded as the
// new mark) when token >= the mark, refused otherwise, in one statement:
//
//	INSERT INTO marks AS m (resource_id, high_water) VALUES (?, ?)
//	ON CONFLICT (resource_id) DO UPDATE SET high_water = excluded.high_water
//	WHERE m.high_water <= excluded.high_water
//
// On MySQL and MariaDB the decision is a conditional UPDATE instead, with
// an INSERT IGNORE for a resource's first mark (see checkMySQL). A
// refusal's Required is read after the refusal. Invalid input is an error
// and changes nothing.
func (m *Marks) CheckContext(ctx context.Context, resourceID string, token int64) (guard.Decision, error) {
	if err := guard.ValidateResourceID(resourceID); err != nil {
		return guard.Decision{}, err
	}
	if err := guard.ValidateToken(token); err != nil {
		return guard.Decision{}, err
	}
	if m.verify != nil { // signed mode: a bare number proves nothing
		return m.badSignature(ctx, resourceID, token)
	}
	return m.record(ctx, resourceID, token)
}

// record applies the rule to a valid token that may be compared.
func (m *Marks) record(ctx context.Context, resourceID string, token int64) (guard.Decision, error) {
	if m.d == MySQL {
		return m.checkMySQL(ctx, resourceID, token)
	}
	a := &args{d: m.d}
	q := fmt.Sprintf(`INSERT INTO %s AS m (%s, %s) VALUES (%s, %s) `+
		`ON CONFLICT (%s) DO UPDATE SET %s = excluded.%s WHERE m.%s <= excluded.%s`,
		m.table, m.idCol, m.markCol, a.add(resourceID), a.add(token),
		m.idCol, m.markCol, m.markCol, m.markCol, m.markCol)
	n, err := m.exec(ctx, q, a.vals)
	if err != nil {
		return guard.Decision{}, err
	}
	if n > 0 {
		return guard.Decision{Accepted: true, Presented: token}, nil
	}
	return m.refusal(ctx, resourceID, token)
}

// checkMySQL is CheckContext on MySQL, which has no conditional upsert
// whose affected-row count tells a refusal apart (ON DUPLICATE KEY UPDATE
// counts "kept the old value" like an insert once found rows are on). The
// decision is always one conditional UPDATE; the row is created first when
// missing:
//
//	UPDATE marks SET high_water = ? WHERE resource_id = ? AND high_water <= ?
//	INSERT IGNORE INTO marks (resource_id, high_water) VALUES (?, ?)  -- only if no row matched
//	UPDATE ... again                                                   -- only if another writer created it first
//
// Inside a transaction under REPEATABLE READ, two writers marking a new
// resource at once may meet InnoDB's deadlock detection; the loser's
// transaction fails and is retried like any other deadlock.
func (m *Marks) checkMySQL(ctx context.Context, resourceID string, token int64) (guard.Decision, error) {
	update := func() (int64, error) {
		a := &args{d: m.d}
		return m.exec(ctx, fmt.Sprintf(`UPDATE %s SET %s = %s WHERE %s = %s AND %s <= %s`,
			m.table, m.markCol, a.add(token), m.idCol, a.add(resourceID), m.markCol, a.add(token)), a.vals)
	}
	n, err := update()
	if err != nil || n > 0 {
		return guard.Decision{Accepted: n > 0, Presented: token}, err
	}
	a := &args{d: m.d}
	// IGNORE skips only the duplicate here: the id is validated to fit
	// VARBINARY(160) and the token is a BIGINT, so nothing is truncated.
	if n, err = m.exec(ctx, fmt.Sprintf(`INSERT IGNORE INTO %s (%s, %s) VALUES (%s, %s)`,
		m.table, m.idCol, m.markCol, a.add(resourceID), a.add(token)), a.vals); err != nil || n > 0 {
		return guard.Decision{Accepted: n > 0, Presented: token}, err
	}
	if n, err = update(); err != nil || n > 0 {
		return guard.Decision{Accepted: n > 0, Presented: token}, err
	}
	return m.refusal(ctx, resourceID, token)
}

func (m *Marks) exec(ctx context.Context, q string, vals []any) (int64, error) {
	res, err := m.db.ExecContext(ctx, q, vals...)
	if err != nil {
		return 0, fmt.Errorf("sqlguard: record mark in %s: %w", m.name, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("sqlguard: record mark in %s: rows affected: %w", m.name, err)
	}
	return n, nil
}

// refusal explains a check that recorded nothing, from the mark read after it.
func (m *Marks) refusal(ctx context.Context, resourceID string, token int64) (guard.Decision, error) {
	hwm, err := m.HighWater(ctx, resourceID)
	if err != nil {
		return guard.Decision{}, err
	}
	if token >= hwm && m.d == MySQL {
		a := &args{d: m.d}
		if err := foundRows(ctx, m.db, fmt.Sprintf(`UPDATE %s SET %s = %s WHERE %s = %s`,
			m.table, m.markCol, m.markCol, m.idCol, a.add(resourceID)), a.vals); err != nil {
			return guard.Decision{}, err
		}
	}
	if token >= hwm {
		return guard.Decision{}, fmt.Errorf("sqlguard: mark of %q refused token %d, yet now accepts it (concurrent change); retry", resourceID, token)
	}
	return guard.Evaluate(hwm, token), nil
}

// HighWater returns the resource's mark, 0 when it has none.
func (m *Marks) HighWater(ctx context.Context, resourceID string) (int64, error) {
	if err := guard.ValidateResourceID(resourceID); err != nil {
		return 0, err
	}
	a := &args{d: m.d}
	var hwm int64
	err := m.db.QueryRowContext(ctx, fmt.Sprintf(`SELECT %s FROM %s WHERE %s = %s`,
		m.markCol, m.table, m.idCol, a.add(resourceID)), a.vals...).Scan(&hwm)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sqlguard: read mark in %s: %w", m.name, err)
	}
	return hwm, nil
}
