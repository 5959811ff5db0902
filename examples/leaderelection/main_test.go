package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"

	"github.com/fenceview/fenceview/examples/internal/storytest"
)

// TestMain runs main instead of the tests in candidate A's process, which
// the story starts from this test binary.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A leader frozen with a real SIGSTOP past its lease is deposed; on resume
// its write with the old term is refused by the row, where the new
// leader's write landed.
func TestPausedLeaderIsFencedOut(t *testing.T) {
	// A fresh server: term 1 for A, 2 for B.
	storytest.Run(t, withoutStdin, []string{"-lease", "300ms"},
		"is elected leader of db-primary, term 1",
		"A writes primary = node-a with term 1: accepted",
		"A's lease ran out; B is elected, term 2",
		"B writes primary = node-b with term 2: accepted",
		"writes with term 1: refused, stale-token, required 2",
		"A's client then says: fenceview: lease lost",
		"primary: node-b, fence_token 2",
	)
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-lease", "soon"}, {"-role", "bystander"}} {
		if err := run(context.Background(), args, nil, &bytes.Buffer{}); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}

// withoutStdin is the story's run: only candidate A reads stdin.
func withoutStdin(ctx context.Context, args []string, stdout io.Writer) error {
	return run(ctx, args, nil, stdout)
}
