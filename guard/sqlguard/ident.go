package sqlguard

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrInvalidIdentifier is returned for a table or column name that is not a
// plain SQL identifier.
var ErrInvalidIdentifier = errors.New("sqlguard: invalid identifier")

// Dialect is the SQL flavour the statements are written in: how
// placeholders are spelled and identifiers quoted.
type Dialect int

const (
	// SQLite uses ? placeholders and double-quoted identifiers.
	SQLite Dialect = iota
	// PostgreSQL uses $1, $2, ... placeholders.
	PostgreSQL
	// MySQL (and MariaDB) uses ? placeholders and backquoted identifiers.
	//
	// # Notes
	//
	//   - The connection must report found (matched) rows as affected, not
	//     only changed ones: go-sql-driver/mysql's clientFoundRows=true (the
	//     protocol's CLIENT_FOUND_ROWS flag). Without it, a holder's repeated
	//     write of the same values under the same token changes nothing and
	//     would read as a refusal; the guards notice and return
	//     ErrFoundRowsRequired instead of a wrong answer. CheckFoundRows
	//     checks a pool up front.
	MySQL
)

func (d Dialect) String() string {
	switch d {
	case SQLite:
		return "sqlite"
	case PostgreSQL:
		return "postgresql"
	case MySQL:
		return "mysql"
	}
	return "dialect(" + strconv.Itoa(int(d)) + ")"
}

func (d Dialect) valid() bool { return d == SQLite || d == PostgreSQL || d == MySQL }

// quote quotes a validated identifier part.
func (d Dialect) quote(part string) string {
	if d == MySQL {
		return "`" + part + "`"
	}
	return `"` + part + `"`
}

// placeholder returns the n-th (1-based) bind parameter.
func (d Dialect) placeholder(n int) string {
	if d == PostgreSQL {
		return "$" + strconv.Itoa(n)
	}
	return "?"
}

// args numbers placeholders as a statement is built, so the SQL text and
// the argument list cannot get out of step.
type args struct {
	d    Dialect
	vals []any
}

func (a *args) add(v any) string {
	a.vals = append(a.vals, v)
	return a.d.placeholder(len(a.vals))
}

const maxIdentLen = 63 // PostgreSQL's NAMEDATALEN-1; MySQL allows 64, SQLite any.

// quoteIdent validates name as a plain identifier, optionally qualified by
// one schema ("public.inventory"), and returns it quoted for d.
//
// Names come from code, not from users, but a guard that builds SQL must not
// be the place an injection starts: only letters, digits and underscores are
// allowed, and quoting also lets reserved words ("order") be used as names.
// Quoted names are case-sensitive in PostgreSQL: write them as the table was
// created (usually lower case).
func (d Dialect) quoteIdent(name string, qualified bool) (string, error) {
	parts := []string{name}
	if qualified {
		parts = strings.Split(name, ".")
		if len(parts) > 2 {
			return "", fmt.Errorf("%w: %q has more than one dot", ErrInvalidIdentifier, name)
		}
	}
	quoted := make([]string, len(parts))
	for i, p := range parts {
		if err := checkIdent(p); err != nil {
			return "", fmt.Errorf("%w: %q: %s", ErrInvalidIdentifier, name, err)
		}
		quoted[i] = d.quote(p)
	}
	return strings.Join(quoted, "."), nil
}

func checkIdent(s string) error {
	if s == "" {
		return errors.New("empty")
	}
	if len(s) > maxIdentLen {
		return fmt.Errorf("longer than %d bytes", maxIdentLen)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return fmt.Errorf("character %q at byte %d (only letters, digits and _ are allowed)", c, i)
		}
	}
	return nil
}
