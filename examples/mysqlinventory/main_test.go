package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fenceview/fenceview/examples/internal/storytest"
	"github.com/fenceview/fenceview/guard/sqlguard"
	"github.com/fenceview/fenceview/internal/dbtest"
)

func TestPausedWriterRefusedByMariaDB(t *testing.T) {
	srv := dbtest.MariaDB(t, "shop")
	dsn := srv.MySQLDSN("shop", "clientFoundRows=true")
	storytest.Run(t, run, []string{"-dsn", dsn, "-lease", "300ms"},
		"A locked inventory:42 with token 1",
		"B locked inventory:42 with token 2",
		"B wrote stock 7 twice with token 2: both accepted",
		"A's write refused: stale-token, token 1 < required 2",
		"refusals reported to fenceview: 1",
		"inventory 42: stock 7, fence_token 2",
	)

	// The same program with a DSN that lacks found rows stops before
	// writing, and says why.
	err := run(context.Background(), []string{"-dsn", srv.MySQLDSN("shop", ""), "-lease", "300ms"}, &bytes.Buffer{})
	if !errors.Is(err, sqlguard.ErrFoundRowsRequired) || !strings.Contains(err.Error(), "clientFoundRows=true") {
		t.Fatalf("run without clientFoundRows = %v", err)
	}
}

func TestDSNRequired(t *testing.T) {
	if err := run(context.Background(), nil, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "-dsn") {
		t.Fatalf("run without -dsn = %v", err)
	}
}
