package sqlguard

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/fenceview/fenceview/guard"
)

// Execer runs a statement. *sql.DB, *sql.Tx and *sql.Conn implement it.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Querier reads one row. *sql.DB, *sql.Tx and *sql.Conn implement it.
type Querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// DB is what the guards need from a database handle: *sql.DB, *sql.Tx or
// *sql.Conn. Pass a *sql.Tx to make the fenced write part of a larger
// transaction; the guard never commits or rolls back.
type DB interface {
	Execer
	Querier
}

var (
	// ErrNotFound: the row (Table) does not exist, so there is nothing to
	// fence. Create rows before fencing writes to them.
	ErrNotFound = errors.New("sqlguard: row not found")
	// ErrVersionConflict: the token was fine but the row's version was not
	// the expected one (see VersionConflictError).
	ErrVersionConflict = errors.New("sqlguard: version conflict")
	// ErrInvalid: a malformed call (no id, a column assigned twice, ...).
	// Nothing was sent to the database.
	ErrInvalid = errors.New("sqlguard: invalid call")
)

// VersionConflictError is returned by UpdateVersion when the fencing token
// was acceptable but the row had moved on from the expected version. Unlike
// a stale token, which means "you no longer hold the lock, stop", a version
// conflict means "re-read and try again", with the same token.
type VersionConflictError struct {
	Expected, Current int64
}

func (e *VersionConflictError) Error() string {
	return fmt.Sprintf("sqlguard: version conflict: expected version %d, row is at %d", e.Expected, e.Current)
}

// Is makes errors.Is(err, ErrVersionConflict) true.
func (e *VersionConflictError) Is(target error) bool { return target == ErrVersionConflict }

// Assignment is one column set by a fenced update. Build it with Set or Add.
type Assignment struct {
	column string
	value  any
	add    bool
}

// Set assigns value to column.
func Set(column string, value any) Assignment { return Assignment{column: column, value: value} }

// Add adds delta to column (column = column + delta), for counters whose new
// value should not depend on a read made before the write.
func Add(column string, delta any) Assignment {
	return Assignment{column: column, value: delta, add: true}
}

// Table fences writes to the rows of one table. Each row carries its own
// high-water mark in a token column (default "fence_token", BIGINT NOT NULL
// DEFAULT 0): the conditional update
//
//	UPDATE inventory SET stock = ?, fence_token = ?
//	 WHERE product_id = ? AND fence_token <= ?
//
// A Table is immutable and safe for concurrent use.
type Table struct {
	d      Dialect
	name   string
	table  string
	idCol  string
	tokCol string
	verCol string
	signed *signedRows // signed mode (signed.go); nil otherwise
}

// TableConfig is what NewTable builds a Table from. Table and IDColumn are
// required; every other field's zero value is its default. Names must be
// plain identifiers (letters, digits, _; the table may be
// schema-qualified); anything else is ErrInvalidIdentifier.
type TableConfig struct {
	// Dialect is the SQL flavour of the statements. Zero: SQLite.
	Dialect Dialect
	// Table is the table of the rows, e.g. "inventory" or "shop.inventory".
	Table string
	// IDColumn identifies a row, e.g. "product_id".
	IDColumn string
	// TokenColumn holds the row's high-water mark. Empty: "fence_token".
	TokenColumn string
	// VersionColumn is the optimistic-concurrency version column of
	// UpdateVersion. Empty: "version".
	VersionColumn string

	// Verifier, when set, puts the table in signed mode: an update is made
	// only with a token whose signature one of its keys made for the row's
	// resource, Resource(id), and that token; anything else is refused
	// with guard.ReasonBadSignature before the row is touched. Use
	// UpdateSigned and UpdateVersionSigned; Update and UpdateVersion
	// refuse every token.
	Verifier *guard.Verifier
	// Resource names the resource a row's tokens are signed for (e.g.
	// "inventory:42" for row 42; Prefixed("inventory:") says so). Required
	// with Verifier, and for NewTableFrom.
	Resource func(id any) (string, error)

	// AcceptUnsignedTokens makes a table built from a client (NewTableFrom)
	// take any token number, signed or not, as NewTable without a Verifier
	// does: whoever can call your code with a high number then locks the
	// real holder out of the row. For a server that does not sign, or a
	// test. Only NewTableFrom reads it.
	AcceptUnsignedTokens bool
}

// NewTable returns a guard for the rows of cfg.Table, identified by
// cfg.IDColumn, or the one error that says which setting is wrong.
// Without cfg.Verifier it takes any token number: build a table from your
// fenceview client with NewTableFrom, which verifies the server's
// signatures.
func NewTable(cfg TableConfig) (*Table, error) {
	d := cfg.Dialect
	if !d.valid() {
		return nil, fmt.Errorf("%w: unknown dialect %v", ErrInvalid, d)
	}
	t := &Table{d: d, name: cfg.Table, tokCol: d.quote("fence_token"), verCol: d.quote("version")}
	var err error
	if t.table, err = d.quoteIdent(cfg.Table, true); err != nil {
		return nil, err
	}
	if t.idCol, err = d.quoteIdent(cfg.IDColumn, false); err != nil {
		return nil, err
	}
	if cfg.TokenColumn != "" {
		if t.tokCol, err = d.quoteIdent(cfg.TokenColumn, false); err != nil {
			return nil, err
		}
	}
	if cfg.VersionColumn != "" {
		if t.verCol, err = d.quoteIdent(cfg.VersionColumn, false); err != nil {
			return nil, err
		}
	}
	// One without the other is a mistake, and the quiet reading of a
	// Resource alone, an unsigned table, would accept bare numbers.
	if (cfg.Verifier == nil) != (cfg.Resource == nil) {
		return nil, fmt.Errorf("%w: signed mode needs both a Verifier and a Resource function", ErrInvalid)
	}
	if cfg.Verifier != nil {
		t.signed = &signedRows{verify: guard.NewVerifyCache(cfg.Verifier), resource: cfg.Resource}
	}
	return t, nil
}

// Update applies set to the row whose id is id, only if token is at least
// the row's high-water mark, and records token as the new mark, in one
// statement.
//
// An accepted write returns Decision{Accepted: true}; its Required is 0
// because the previous mark is deliberately not read (that would cost a
// round trip on every write). A refused write returns Accepted false,
// Reason guard.ReasonStale and Required read after the refusal, so it is the
// mark that actually beat this token, never an older value. Refusals are
// decisions, not errors; use d.Err(resource) to turn one into an error.
// ErrNotFound means the row does not exist.
func (t *Table) Update(ctx context.Context, db DB, id any, token int64, set ...Assignment) (guard.Decision, error) {
	return t.update(ctx, db, id, token, nil, set)
}

// UpdateVersion is Update combined with optimistic locking: the row must also
// be at version expected, and the write increments it.
//
//	UPDATE documents SET content = ?, version = version + 1, fence_token = ?
//	 WHERE document_id = ? AND version = ? AND fence_token <= ?
//
// When both guards fail the stale token wins (the writer must stop, not
// retry). A version mismatch alone is a *VersionConflictError.
func (t *Table) UpdateVersion(ctx context.Context, db DB, id any, token, expected int64, set ...Assignment) (guard.Decision, error) {
	return t.update(ctx, db, id, token, &expected, set)
}

func (t *Table) update(ctx context.Context, db DB, id any, token int64, version *int64, set []Assignment) (guard.Decision, error) {
	if err := guard.ValidateToken(token); err != nil {
		return guard.Decision{}, err
	}
	if id == nil {
		return guard.Decision{}, fmt.Errorf("%w: nil row id", ErrInvalid)
	}
	if t.signed != nil { // signed mode: a bare number proves nothing
		return t.badSignature(ctx, db, id, token)
	}
	return t.write(ctx, db, id, token, version, set)
}

// write runs the fenced UPDATE for a valid token that may be compared.
func (t *Table) write(ctx context.Context, db DB, id any, token int64, version *int64, set []Assignment) (guard.Decision, error) {
	a := &args{d: t.d}
	var sb strings.Builder
	sb.WriteString("UPDATE ")
	sb.WriteString(t.table)
	sb.WriteString(" SET ")
	seen := map[string]bool{t.tokCol: true, t.idCol: true}
	if version != nil {
		seen[t.verCol] = true
	}
	for _, s := range set {
		col, err := t.d.quoteIdent(s.column, false)
		if err != nil {
			return guard.Decision{}, err
		}
		if seen[col] {
			return guard.Decision{}, fmt.Errorf("%w: column %s assigned twice or reserved for the guard", ErrInvalid, col)
		}
		seen[col] = true
		if s.add {
			fmt.Fprintf(&sb, "%s = %s + %s, ", col, col, a.add(s.value))
		} else {
			fmt.Fprintf(&sb, "%s = %s, ", col, a.add(s.value))
		}
	}
	if version != nil {
		fmt.Fprintf(&sb, "%s = %s + 1, ", t.verCol, t.verCol)
	}
	fmt.Fprintf(&sb, "%s = %s WHERE %s = %s AND %s <= %s",
		t.tokCol, a.add(token), t.idCol, a.add(id), t.tokCol, a.add(token))
	if version != nil {
		fmt.Fprintf(&sb, " AND %s = %s", t.verCol, a.add(*version))
	}

	res, err := db.ExecContext(ctx, sb.String(), a.vals...)
	if err != nil {
		return guard.Decision{}, fmt.Errorf("sqlguard: update %s: %w", t.name, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return guard.Decision{}, fmt.Errorf("sqlguard: update %s: rows affected: %w", t.name, err)
	}
	if n > 0 {
		return guard.Decision{Accepted: true, Presented: token}, nil
	}
	return t.refusal(ctx, db, id, token, version)
}

// refusal explains an update that matched no row. It reads the mark after
// the refusal: a value read before could be older than the one that won.
func (t *Table) refusal(ctx context.Context, db DB, id any, token int64, version *int64) (guard.Decision, error) {
	ra := &args{d: t.d}
	q := "SELECT " + t.tokCol
	if version != nil {
		q += ", " + t.verCol
	}
	q += " FROM " + t.table + " WHERE " + t.idCol + " = " + ra.add(id)
	var hwm, cur int64
	dest := []any{&hwm}
	if version != nil {
		dest = append(dest, &cur)
	}
	err := db.QueryRowContext(ctx, q, ra.vals...).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return guard.Decision{}, fmt.Errorf("%w: %s %s = %v", ErrNotFound, t.name, t.idCol, id)
	}
	if err != nil {
		return guard.Decision{}, fmt.Errorf("sqlguard: read mark of %s: %w", t.name, err)
	}
	if token < hwm {
		return guard.Evaluate(hwm, token), nil
	}
	if version != nil && cur != *version {
		return guard.Decision{}, &VersionConflictError{Expected: *version, Current: cur}
	}
	if t.d == MySQL {
		// The likeliest cause on MySQL: a repeated write that changed
		// nothing, on a connection that counts changed rows only.
		pa := &args{d: t.d}
		if err := foundRows(ctx, db, "UPDATE "+t.table+" SET "+t.tokCol+" = "+t.tokCol+
			" WHERE "+t.idCol+" = "+pa.add(id), pa.vals); err != nil {
			return guard.Decision{}, err
		}
	}
	// The row accepts the token now but did not during the update: it was
	// changed in between (deleted and re-created, or its mark lowered by
	// hand). Not a decision this guard can make; the caller may retry.
	return guard.Decision{}, fmt.Errorf("sqlguard: update of %s matched no row, yet the row now accepts token %d (concurrent change); retry", t.name, token)
}
