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
	db    DB
	d     Dialect
	name  string
	table string

	verify *guard.VerifyCache // signed mode (signed.go); nil otherwise
}

const (
	marksIDCol   = `"resource_id"`
	marksMarkCol = `"high_water"`
)

// NewMarks returns marks kept in table (a plain or schema-qualified
// identifier) on db.
func NewMarks(db DB, d Dialect, table string) (*Marks, error) {
	if !d.valid() {
		return nil, fmt.Errorf("%w: unknown dialect %v", ErrInvalid, d)
	}
	if db == nil {
		return nil, fmt.Errorf("%w: nil database", ErrInvalid)
	}
	q, err := quoteIdent(table, true)
	if err != nil {
		return nil, err
	}
	return &Marks{db: db, d: d, name: table, table: q}, nil
}

// On returns the same marks used through db, typically a *sql.Tx, so that
// recording a token commits or rolls back with the write it fences.
func (m *Marks) On(db DB) *Marks {
	c := *m
	c.db = db
	return &c
}

// CreateTable creates the marks table if it does not exist.
func (m *Marks) CreateTable(ctx context.Context) error {
	q := fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (%s VARCHAR(%d) PRIMARY KEY, %s BIGINT NOT NULL)`,
		m.table, marksIDCol, guard.MaxResourceIDLen, marksMarkCol)
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
// A refusal's Required is read after the refusal. Invalid input is an error
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
	a := &args{d: m.d}
	q := fmt.Sprintf(`INSERT INTO %s AS m (%s, %s) VALUES (%s, %s) `+
		`ON CONFLICT (%s) DO UPDATE SET %s = excluded.%s WHERE m.%s <= excluded.%s`,
		m.table, marksIDCol, marksMarkCol, a.add(resourceID), a.add(token),
		marksIDCol, marksMarkCol, marksMarkCol, marksMarkCol, marksMarkCol)
	res, err := m.db.ExecContext(ctx, q, a.vals...)
	if err != nil {
		return guard.Decision{}, fmt.Errorf("sqlguard: record mark in %s: %w", m.name, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return guard.Decision{}, fmt.Errorf("sqlguard: record mark in %s: rows affected: %w", m.name, err)
	}
	if n > 0 {
		return guard.Decision{Accepted: true, Presented: token}, nil
	}
	hwm, err := m.HighWater(ctx, resourceID)
	if err != nil {
		return guard.Decision{}, err
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
		marksMarkCol, m.table, marksIDCol, a.add(resourceID)), a.vals...).Scan(&hwm)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sqlguard: read mark in %s: %w", m.name, err)
	}
	return hwm, nil
}
