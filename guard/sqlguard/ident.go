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
// placeholders are spelled. Identifiers are double-quoted in both.
type Dialect int

const (
	// SQLite uses ? placeholders. MySQL also uses ?, but quotes identifiers
	// with backticks and, by default, counts only changed rows as affected,
	// so it is not supported.
	SQLite Dialect = iota
	// PostgreSQL uses $1, $2, ... placeholders.
	PostgreSQL
)

func (d Dialect) String() string {
	switch d {
	case SQLite:
		return "sqlite"
	case PostgreSQL:
		return "postgresql"
	}
	return "dialect(" + strconv.Itoa(int(d)) + ")"
}

func (d Dialect) valid() bool { return d == SQLite || d == PostgreSQL }

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

const maxIdentLen = 63 // PostgreSQL's NAMEDATALEN-1; SQLite has no limit.

// quoteIdent validates name as a plain identifier, optionally qualified by
// one schema ("public.inventory"), and returns it double-quoted.
//
// Names come from code, not from users, but a guard that builds SQL must not
// be the place an injection starts: only letters, digits and underscores are
// allowed, and quoting also lets reserved words ("order") be used as names.
// Quoted names are case-sensitive in PostgreSQL: write them as the table was
// created (usually lower case).
func quoteIdent(name string, qualified bool) (string, error) {
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
		quoted[i] = `"` + p + `"`
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
