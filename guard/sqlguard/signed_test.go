package sqlguard_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/sqlguard"
	"github.com/fenceview/fenceview/internal/signedtest"
)

// The signed table on Marks in a real SQLite file, directly, inside a
// transaction (Marks.On keeps signed mode), and through CheckWith.
func TestMarksSignedTable(t *testing.T) {
	db, _ := openSQLite(t)
	base := newMarks(t, db)
	t.Run("direct", func(t *testing.T) {
		v := &guard.Verifier{}
		m := base.Signed(v)
		signedtest.Run(t, v, func(r string, tok int64, sig string) (guard.Decision, error) {
			return m.CheckSignedContext(context.Background(), r, tok, sig)
		}, signedtest.Options{AcceptedWithoutRequired: true})
	})
	if _, err := db.Exec(`DELETE FROM fence_marks`); err != nil {
		t.Fatal(err)
	}
	t.Run("in a transaction", func(t *testing.T) {
		v := &guard.Verifier{}
		m := base.Signed(v)
		signedtest.Run(t, v, func(r string, tok int64, sig string) (guard.Decision, error) {
			tx, err := db.Begin()
			if err != nil {
				t.Fatal(err)
			}
			d, err := m.On(tx).CheckSignedContext(context.Background(), r, tok, sig)
			if cerr := tx.Commit(); cerr != nil {
				t.Fatal(cerr)
			}
			return d, err
		}, signedtest.Options{AcceptedWithoutRequired: true})
	})
}

// In signed mode the unsigned entry points refuse every token without
// writing; outside it, signatures are ignored.
func TestMarksSignedRefusesUnsigned(t *testing.T) {
	db, _ := openSQLite(t)
	plain := newMarks(t, db)
	v, _ := guard.NewVerifier(signedtest.Public(signedtest.Old))
	m := plain.Signed(v)
	if d, err := m.Check("r", 5); err != nil || d.Reason != guard.ReasonBadSignature {
		t.Fatalf("unsigned Check in signed mode = %+v, %v", d, err)
	}
	if hw, _ := m.HighWater(context.Background(), "r"); hw != 0 {
		t.Fatalf("a refused token wrote mark %d", hw)
	}
	if _, err := m.CheckSigned("", 5, ""); !errors.Is(err, guard.ErrInvalidResourceID) {
		t.Fatalf("invalid id: %v", err)
	}
	if d, err := plain.CheckSigned("r", 5, "not a signature"); err != nil || !d.Accepted {
		t.Fatalf("marks not in signed mode refused: %+v, %v", d, err)
	}
	if d, _ := m.CheckSigned("r", 4, signedtest.Sign(t, signedtest.Old, "r", 4)); d.Accepted || d.Reason != guard.ReasonStale || d.Required != 5 {
		t.Fatalf("signed stale token = %+v", d)
	}
}

// The signed table on rows that carry their own token column: the row is
// only updated for a verified token, and a refused write leaves it alone.
func TestTableSignedTable(t *testing.T) {
	db, _ := openSQLite(t)
	ctx := context.Background()
	if _, err := db.Exec(`CREATE TABLE docs (id TEXT PRIMARY KEY, body TEXT NOT NULL DEFAULT '', fence_token BIGINT NOT NULL DEFAULT 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO docs (id) VALUES ('orders'), ('billing'), ('batch/a'), ('batch/b'), ('batch/c'), ('batch/d'), ('batch/e'), ('batch/f'), ('batch/g'), ('batch/h')`); err != nil {
		t.Fatal(err)
	}
	v := &guard.Verifier{}
	rowResource := func(id any) (string, error) {
		return id.(string), nil // the row id is the resource id
	}
	// Half a signed mode is refused: a Resource alone would make an
	// unsigned table that accepts bare numbers.
	for _, half := range []sqlguard.TableConfig{{Table: "docs", IDColumn: "id", Verifier: v}, {Table: "docs", IDColumn: "id", Resource: rowResource}} {
		if _, err := sqlguard.NewTable(half); !errors.Is(err, sqlguard.ErrInvalid) {
			t.Fatalf("NewTable(Verifier %v, Resource %v) = %v, want ErrInvalid", half.Verifier != nil, half.Resource != nil, err)
		}
	}
	tb, err := sqlguard.NewTable(sqlguard.TableConfig{Dialect: sqlguard.SQLite, Table: "docs", IDColumn: "id", Verifier: v, Resource: rowResource})
	if err != nil {
		t.Fatal(err)
	}
	signedtest.Run(t, v, func(r string, tok int64, sig string) (guard.Decision, error) {
		return tb.UpdateSigned(ctx, db, r, tok, sig, sqlguard.Set("body", sig))
	}, signedtest.Options{AcceptedWithoutRequired: true})
	var body string
	var mark int64
	db.QueryRow(`SELECT body, fence_token FROM docs WHERE id = 'orders'`).Scan(&body, &mark)
	if mark != 9 || body != signedtest.Sign(t, signedtest.New, "orders", 9) {
		t.Fatalf("row after the table: mark %d body %q", mark, body)
	}
	if d, err := tb.Update(ctx, db, "orders", 100, sqlguard.Set("body", "x")); err != nil || d.Reason != guard.ReasonBadSignature || d.Required != 9 {
		t.Fatalf("unsigned Update in signed mode = %+v, %v", d, err)
	}
	if _, err := tb.UpdateSigned(ctx, db, "nope", 1, signedtest.Sign(t, signedtest.New, "nope", 1)); !errors.Is(err, sqlguard.ErrNotFound) {
		t.Fatalf("missing row: %v", err)
	}
}

// Guarded reads, on Marks and on a table's rows: the reads table.
func TestSignedReadsTable(t *testing.T) {
	db, _ := openSQLite(t)
	ctx := context.Background()
	v, _ := guard.NewVerifier(signedtest.Public(signedtest.New))
	m := newMarks(t, db).Signed(v)
	signedtest.RunReads(t, func(r string, tok int64, sig string) (guard.Decision, error) {
		return guard.CheckReadWith(ctx, m, r, tok, sig)
	}, func(r string, tok int64, sig string) (guard.Decision, error) {
		return guard.CheckSignedWith(ctx, m, r, tok, sig)
	}, signedtest.Options{AcceptedWithoutRequired: true})

	if _, err := db.Exec(`CREATE TABLE docs (id TEXT PRIMARY KEY, body TEXT NOT NULL DEFAULT '', fence_token BIGINT NOT NULL DEFAULT 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO docs (id) VALUES (?)`, signedtest.ReadResource); err != nil {
		t.Fatal(err)
	}
	tb, err := sqlguard.NewTable(sqlguard.TableConfig{Dialect: sqlguard.SQLite, Table: "docs", IDColumn: "id", Verifier: v,
		Resource: func(id any) (string, error) { return id.(string), nil }})
	if err != nil {
		t.Fatal(err)
	}
	signedtest.RunReads(t, func(r string, tok int64, sig string) (guard.Decision, error) {
		return tb.ReadSigned(ctx, db, r, tok, sig)
	}, func(r string, tok int64, sig string) (guard.Decision, error) {
		return tb.UpdateSigned(ctx, db, r, tok, sig, sqlguard.Set("body", "written"))
	}, signedtest.Options{AcceptedWithoutRequired: true})
	var mark int64
	db.QueryRow(`SELECT fence_token FROM docs WHERE id = ?`, signedtest.ReadResource).Scan(&mark)
	if mark != 8 {
		t.Fatalf("the row's mark is %d, want 8", mark)
	}
}
