package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/client/fenceviewtest"
	"github.com/fenceview/fenceview/examples/internal/storytest"
	"github.com/fenceview/fenceview/internal/cmdmain"
	"github.com/fenceview/fenceview/internal/dbtest"
)

func TestPausedCommitRefusedByTheManifest(t *testing.T) {
	store := dbtest.Versity(t, "tables")
	srv := fenceviewtest.New(t)
	storytest.Run(t, run, []string{
		"-s3", "http://" + store.Addr, "-bucket", "tables", "-prefix", "test/",
		"-access-key", dbtest.S3AccessKey, "-secret-key", dbtest.S3SecretKey,
		"-server", srv.URL, "-lease", "300ms",
	},
		"A locked table:orders with token 1",
		"B locked table:orders with token 2",
		"B wrote test/orders/data/2-0.csv, test/orders/data/2-1.csv",
		"B committed test/orders/_manifest.json with token 2",
		"A's write refused: stale-token, token 1 < required 2",
		"refusals reported to fenceview by s3manifest: 1",
		"A deleted its uncommitted files test/orders/data/1-0.csv, test/orders/data/1-1.csv",
		"the manifest lists test/orders/data/2-0.csv, test/orders/data/2-1.csv (token 2)",
	)
	// The refusal is in the server's history under the table's lock.
	c := srv.Client(t)
	page, err := c.Rejections(context.Background(), client.RejectionQuery{Resource: "table:orders"})
	if err != nil || len(page.Rejections) != 1 || page.Rejections[0].Presented != 1 || page.Rejections[0].Required != 2 || page.Rejections[0].Source != "s3manifest" {
		t.Fatalf("rejection history = %+v, %v", page.Rejections, err)
	}
}

// Without -s3 the example says which flag it needs, as a usage error
// (exit 2).
func TestS3Required(t *testing.T) {
	err := run(context.Background(), []string{"-bucket", "b"}, &bytes.Buffer{})
	if !errors.As(err, new(cmdmain.UsageError)) || !strings.Contains(err.Error(), "-s3") {
		t.Fatalf("run without -s3 = %v", err)
	}
}
