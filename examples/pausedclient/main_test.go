package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/fenceview/fenceview/examples/internal/storytest"
)

func TestPausedClientIsFencedOut(t *testing.T) {
	// A fresh server issues 1 to A and 2 to B.
	out := storytest.Run(t, run, []string{"-lease", "300ms"},
		"A locked inventory:42 with token 1",
		"B locked inventory:42 with token 2",
		"A's write refused: stale-token, token 1 < required 2",
		"inventory 42: stock 7, fence_token 2",
	)
	if !strings.Contains(out, "lease lost") {
		t.Errorf("A's client did not report the lost lease:\n%s", out)
	}
}

func TestBadFlags(t *testing.T) {
	if err := run(context.Background(), []string{"-lease", "soon"}, &bytes.Buffer{}); err == nil {
		t.Fatal("bad flag accepted")
	}
}
