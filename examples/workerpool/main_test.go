package main

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/fenceview/fenceview/examples/internal/storytest"
	"github.com/fenceview/fenceview/internal/cmdmain"
)

func TestWorkersFenceTheirPartitionsBySlotToken(t *testing.T) {
	// A fresh server: every slot's counter starts at 1, and slot 2's
	// second grant takes 2.
	storytest.Run(t, run, []string{"-workers", "4", "-stall-lease", "300ms"},
		"worker-0 holds slot 0 (partitions#0) with token 1",
		"worker-3 holds slot 3 (partitions#3) with token 1",
		"spare finds no permit free (4 permits), waits",
		"spare holds slot 2 with token 2",
		"worker-2's write refused: stale-token, token 1 < required 2",
		"partition 2: spare (taken over), fence_token 2",
		"partition 3: worker-3 (first pass), fence_token 1",
	)
}

// Bad flags, out-of-range values and stray arguments are usage errors
// (exit 2), found before any server starts.
func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-workers", "2"}, {"-workers", "many"}, {"-stall-lease", "soon"}, {"extra"}} {
		if err := run(context.Background(), args, &bytes.Buffer{}); !errors.As(err, new(cmdmain.UsageError)) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}
