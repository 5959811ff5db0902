package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/fenceview/fenceview/internal/sqlite"
)

// runBackup is `fenceview backup`: a consistent copy of a live database,
// taken with SQLite's online backup API while the server keeps serving.
func runBackup(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fenceview backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", "fenceview.db", "the database to copy (a running server may be using it)")
	out := fs.String("out", "", "the backup file to create (must not exist; default fenceview-<UTC time>.db beside --db)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: fenceview backup [--db fenceview.db] [--out FILE]\n\n"+
			"Copies the database while the server runs: one consistent snapshot, integrity-checked and fsynced.\n"+
			"To restore: stop the server, replace its --db file with the copy (remove any -wal and -shm files beside it), start it.\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parseCommandFlags(fs, args, stderr); !ok {
		return code
	}
	if *out == "" {
		*out = backupName(*db, time.Now())
	}
	start := time.Now()
	pages, err := sqlite.Backup(ctx, *db, *out)
	if err != nil {
		fmt.Fprintln(stderr, "fenceview backup:", err)
		return 1
	}
	fmt.Fprintf(stdout, "backed up %s to %s (%d pages, %s)\n", *db, *out, pages, time.Since(start).Round(time.Millisecond))
	return 0
}

func backupName(db string, now time.Time) string {
	base := db
	if n := len(base); n > 3 && base[n-3:] == ".db" {
		base = base[:n-3]
	}
	return base + "-" + now.UTC().Format("20060102T150405Z") + ".db"
}
