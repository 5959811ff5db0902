package sqlguard_test

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"

	"github.com/fenceview/fenceview/guard/internal/marktest"
	"github.com/fenceview/fenceview/guard/sqlguard"
)

func newMarks(t *testing.T, db *sql.DB) *sqlguard.Marks {
	return marktest.New(t, db, sqlguard.SQLite, "fence_marks")
}

// Marks live in the file: a new process (a new handle) keeps refusing.
func TestMarksSurviveReopen(t *testing.T) {
	db, path := openSQLite(t)
	m := newMarks(t, db)
	if d, err := m.Check("svc", 30); err != nil || !d.Accepted {
		t.Fatalf("%+v %v", d, err)
	}
	db.Close()
	db2, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	m2, _ := sqlguard.NewMarks(db2, sqlguard.SQLite, "fence_marks")
	d, err := m2.Check("svc", 29)
	if err != nil || d.Accepted || d.Required != 30 {
		t.Fatalf("after reopen: %+v, %v", d, err)
	}
}

func TestMarksOnTxRollsBack(t *testing.T) {
	ctx := context.Background()
	db, _ := openSQLite(t)
	m := newMarks(t, db)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := m.On(tx).CheckContext(ctx, "svc", 8); err != nil || !d.Accepted {
		t.Fatalf("%+v %v", d, err)
	}
	tx.Rollback()
	if hwm, err := m.HighWater(ctx, "svc"); err != nil || hwm != 0 {
		t.Fatalf("after rollback mark = %d, %v", hwm, err)
	}
}

func TestMarksConcurrent(t *testing.T) {
	db, _ := openSQLite(t)
	m := newMarks(t, db)
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := map[int64]bool{}
	for tok := int64(1); tok <= 20; tok++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := m.Check("hot", tok)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			accepted[tok] = d.Accepted
			mu.Unlock()
		}()
	}
	wg.Wait()
	if hwm, _ := m.HighWater(context.Background(), "hot"); hwm != 20 || !accepted[20] {
		t.Fatalf("mark = %d, 20 accepted = %v", hwm, accepted[20])
	}
}

func TestMarksBadNames(t *testing.T) {
	db, _ := openSQLite(t)
	if _, err := sqlguard.NewMarks(db, sqlguard.SQLite, "marks; DROP TABLE x"); !errors.Is(err, sqlguard.ErrInvalidIdentifier) {
		t.Fatalf("err = %v", err)
	}
	if _, err := sqlguard.NewMarks(nil, sqlguard.SQLite, "marks"); !errors.Is(err, sqlguard.ErrInvalid) {
		t.Fatalf("nil db err = %v", err)
	}
	if _, err := sqlguard.NewMarks(db, sqlguard.Dialect(9), "marks"); !errors.Is(err, sqlguard.ErrInvalid) {
		t.Fatalf("bad dialect err = %v", err)
	}
}
