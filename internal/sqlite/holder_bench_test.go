package sqlite

import (
	"context"
	"testing"
)

// A holder page's history when the holder has no events among the newest
// 20,000 (the dashboard's window): the worst case, a read of the whole
// window, whatever the history's size.
//
//	go test ./sqlite -run '^$' -bench HolderEvents -benchtime 200x
func BenchmarkHolderEvents(b *testing.B) {
	db := historyDB(b, 200_000)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		got, err := db.HolderEvents(ctx, "nobody", nil, 20_000, 50)
		if err != nil || len(got) != 0 {
			b.Fatal(got, err)
		}
	}
}
