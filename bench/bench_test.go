package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/fenceview/fenceview/internal/load"
)

// The SQLite baseline passes the load checks (tokens increase, stale
// writes refused, current ones accepted); the other peers need servers and
// are exercised by run.sh.
func TestSQLiteDriverPassesChecks(t *testing.T) {
	d := newSQLite(t.TempDir())
	defer d.Close()
	for _, mix := range []load.Mix{{Grant: 1, Fence: 1, Stale: 1}, {Fence: 1}} {
		rep, err := load.Run(context.Background(), load.Config{
			Clients: 4, Resources: 8, Duration: 200 * time.Millisecond, Mix: mix, Prefix: mix.String(),
		}, d)
		if err != nil {
			t.Fatal(err)
		}
		if err := rep.Err(); err != nil {
			t.Fatal(err)
		}
		if rep.Accepted == 0 {
			t.Errorf("%v: no fenced write accepted", mix)
		}
	}
}

func TestMarkdownTable(t *testing.T) {
	var b bytes.Buffer
	markdown(&b, [][]string{{"system", "grants/s"}, {"fenceview", "12345"}, {"redis", "7"}})
	want := `| system    | grants/s |
|-----------|---------:|
| fenceview |    12345 |
| redis     |        7 |
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
