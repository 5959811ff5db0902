// Package sqlguard fences writes to a SQL database with fencing tokens, on
// any database/sql handle or transaction.
//
// The check and the write are one statement, so no writer can slip between
// them: the token comparison is part of the UPDATE's WHERE clause, and zero
// rows affected is the refusal. Only after a refusal is the row's mark read,
// to tell the caller which token it would have needed.
//
// Two shapes are offered:
//
//   - Table fences rows that carry their own token column (an inventory
//     row with fence_token), optionally combined with an
//     optimistic version column (UpdateVersion).
//   - Marks keeps one high-water mark per resource id in a table of its
//     own, for resources with no row of their own: it is a durable
//     guard.Guard, usable by the HTTP middleware and the external-call
//     guard.
//
// Quick start, for a table created with a fence_token column:
//
//	inv, _ := sqlguard.NewTable(sqlguard.TableConfig{Dialect: sqlguard.SQLite, Table: "inventory", IDColumn: "product_id"})
//	d, err := inv.Update(ctx, db, 42, token, sqlguard.Set("stock", 7))
//	if err != nil { /* bad input, database error, row missing */ }
//	if !d.Accepted { /* fenced out: stop, d.Required beat us */ }
//
// Statements are written for SQLite (? placeholders), PostgreSQL ($n) or
// MySQL and MariaDB (?, backquoted names); identifiers are validated
// (letters, digits, _) and quoted, values are always bound, never spliced
// into the SQL text.
//
// MySQL and MariaDB count only changed rows as affected unless the
// connection asks for found rows; open them with go-sql-driver/mysql's
// clientFoundRows=true (CheckFoundRows verifies a pool; a guard on a
// connection without it returns ErrFoundRowsRequired rather than a wrong
// decision):
//
//	db, _ := sql.Open("mysql", "app@tcp(127.0.0.1:3306)/shop?clientFoundRows=true")
//	inv, _ := sqlguard.NewTable(sqlguard.TableConfig{Dialect: sqlguard.MySQL, Table: "inventory", IDColumn: "product_id"})
package sqlguard
