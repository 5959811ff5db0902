package sqlguard_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/fenceview/fenceview/guard/sqlguard"
)

// BenchmarkUpdateServers is one fenced row update (one statement) on real
// PostgreSQL and MariaDB servers on loopback, one writer at a time.
//
//	go test ./guard/sqlguard -run '^$' -bench UpdateServers -benchtime 2000x
func BenchmarkUpdateServers(b *testing.B) {
	for _, s := range []struct {
		name string
		d    sqlguard.Dialect
		open func(testing.TB) *sql.DB
	}{
		{"postgresql", sqlguard.PostgreSQL, openPostgres},
		{"mariadb", sqlguard.MySQL, func(t testing.TB) *sql.DB {
			db, _ := openMariaDB(t, "clientFoundRows=true")
			return db
		}},
	} {
		// One server per database, started outside b.Run, whose function
		// runs more than once; tokens keep rising across those runs.
		db := s.open(b)
		for _, q := range []string{
			`CREATE TABLE bench (id BIGINT PRIMARY KEY, val BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0)`,
			`INSERT INTO bench (id, val) VALUES (1, 0)`,
		} {
			if _, err := db.Exec(q); err != nil {
				b.Fatal(err)
			}
		}
		tbl, err := sqlguard.NewTable(sqlguard.TableConfig{Dialect: s.d, Table: "bench", IDColumn: "id"})
		if err != nil {
			b.Fatal(err)
		}
		var token int64
		b.Run(s.name, func(b *testing.B) {
			ctx := context.Background()
			for i := 0; i < b.N; i++ {
				token++
				if d, err := tbl.Update(ctx, db, 1, token, sqlguard.Set("val", i)); err != nil || !d.Accepted {
					b.Fatalf("%+v %v", d, err)
				}
			}
		})
	}
}
