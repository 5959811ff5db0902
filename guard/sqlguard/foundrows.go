package sqlguard

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// ErrFoundRowsRequired: a MySQL connection counts only changed rows as
// affected, so a write that matched its row but changed nothing (a holder
// repeating its last write) cannot be told from a refusal. Open the pool
// with go-sql-driver/mysql's clientFoundRows=true.
var ErrFoundRowsRequired = errors.New("sqlguard: the MySQL connection must report found rows " +
	"(go-sql-driver/mysql: add clientFoundRows=true to the DSN)")

// foundRows runs probe, an UPDATE that matches one row and changes nothing,
// and returns ErrFoundRowsRequired when the connection counted zero rows.
// It runs only after a write matched no row yet the row accepts the token,
// so correct setups never pay for it.
func foundRows(ctx context.Context, db Execer, probe string, vals []any) error {
	res, err := db.ExecContext(ctx, probe, vals...)
	if err != nil {
		return fmt.Errorf("sqlguard: check found rows: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return ErrFoundRowsRequired
	}
	return nil
}

// CheckFoundRows checks, once at start-up, that db's MySQL connections
// report found rows (clientFoundRows=true), so a misconfigured pool fails
// before its first write rather than at a holder's first repeated write.
// It needs the CREATE TEMPORARY TABLES privilege. Connections of one pool
// share their DSN, so checking one checks them all.
//
//	db, _ := sql.Open("mysql", "app@tcp(db:3306)/shop?clientFoundRows=true")
//	if err := sqlguard.CheckFoundRows(ctx, db); err != nil { return err }
func CheckFoundRows(ctx context.Context, db *sql.DB) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlguard: check found rows: %w", err)
	}
	defer conn.Close()
	// A temporary table lives in this session only: no name clash, nothing
	// left behind. Dropped explicitly since the pool keeps the session.
	for _, q := range []string{
		"CREATE TEMPORARY TABLE `sqlguard_found_rows_probe` (`x` INT NOT NULL)",
		"INSERT INTO `sqlguard_found_rows_probe` (`x`) VALUES (1)",
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("sqlguard: check found rows: %w", err)
		}
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "DROP TEMPORARY TABLE `sqlguard_found_rows_probe`")
	return foundRows(ctx, conn, "UPDATE `sqlguard_found_rows_probe` SET `x` = `x`", nil)
}
