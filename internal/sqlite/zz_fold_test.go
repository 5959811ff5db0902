package sqlite

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
)

func TestZZFoldTime(t *testing.T) {
	db := openTemp(t)
	db.FoldEvery = 1 << 30
	now := time.Now()
	var seq int64
	for i := 0; i < 8192/32; i++ {
		rows := make([]*fenceview.Resource, 32)
		events := make([]fenceview.Event, 32)
		for j := range rows {
			seq++
			r := &fenceview.Resource{ResourceID: fmt.Sprintf("resource-%d", (i*32+j)*7919%4096), LastToken: seq, Token: seq, Holder: "holder", HoldCount: 1, LeaseMs: 30000, GrantedAt: now, ExpiresAt: now}
			rows[j] = r
			events[j] = fenceview.Event{Seq: seq, Type: fenceview.EventGrant, ResourceID: r.ResourceID, Token: seq, Holder: r.Holder, At: now}
		}
		if err := db.Apply(context.Background(), rows, events); err != nil {
			t.Fatal(err)
		}
	}
	evq := `(SELECT resource_id, MAX(seq) AS seq, resource_row AS r, at FROM events GROUP BY resource_id)`
	for _, q := range []string{
		newestCTE + ` SELECT * FROM n`,
		newestCTE + ` SELECT * FROM w`,
		`SELECT resource_id, ` + carriedRowColumns + ` FROM ` + evq,
		`SELECT resource_id, r, at FROM ` + evq,
		`SELECT resource_id, json_extract(r, '$[0]', '$[1]', '$[2]', '$[3]', '$[4]', '$[5]', '$[6]', '$[7]', '$[8]', '$[9]', '$[10]', '$[11]', '$[12]', '$[13]', '$[14]', '$[15]', '$[16]', '$[17]') FROM ` + evq,
	} {
		start := time.Now()
		rows, err := db.read.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		n := 0
		for rows.Next() {
			rows.Scan(ptrs...)
			n++
		}
		rows.Close()
		fmt.Println(n, len(cols), time.Since(start))
	}
	start := time.Now()
	if _, err := db.Resources(t.Context()); err != nil {
		t.Fatal(err)
	}
	fmt.Println("resources", time.Since(start))
	start = time.Now()
	if err := db.fold(t.Context()); err != nil {
		t.Fatal(err)
	}
	fmt.Println("fold", time.Since(start))
}
