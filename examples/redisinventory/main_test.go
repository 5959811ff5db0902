package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/fenceview/fenceview/client/fenceviewtest"
	"github.com/fenceview/fenceview/examples/internal/storytest"
	"github.com/fenceview/fenceview/internal/cmdmain"
	"github.com/fenceview/fenceview/internal/dbtest"
)

func TestPausedWriterRefusedByRedis(t *testing.T) {
	ctx := context.Background()
	rs := dbtest.Redis(t)
	srv, err := fenceviewtest.Start(ctx, fenceviewtest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	storytest.Run(t, run, []string{"-redis", rs.Addr, "-server", srv.URL, "-lease", "300ms"},
		"A locked inventory:42 with token 1",
		"B locked inventory:42 with token 2",
		"A's write refused: stale-token, token 1 < required 2",
		"refusals reported to fenceview: 1",
		"inventory:42: stock 7, reserved 3, mark 2 (key redisinventory:",
		"{inventory:42}:stock)",
	)
	// The reported refusal is in the server's history, with its source.
	resp, err := http.Get(srv.URL + "/v1/rejections?resource=inventory:42")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Rejections []struct {
			Presented, Required int64
			Reason, Source      string
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if len(body.Rejections) != 1 || body.Rejections[0].Source != "inventory-redis" ||
		body.Rejections[0].Presented != 1 || body.Rejections[0].Required != 2 {
		t.Fatalf("rejection history = %+v", body.Rejections)
	}
}

// Without -redis the example says which flag it needs, as a usage error
// (exit 2).
func TestRedisRequired(t *testing.T) {
	err := run(context.Background(), nil, &bytes.Buffer{})
	if !errors.As(err, new(cmdmain.UsageError)) || !strings.Contains(err.Error(), "-redis") {
		t.Fatalf("run without -redis = %v", err)
	}
}
