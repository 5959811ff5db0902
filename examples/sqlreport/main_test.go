package main

import (
	"testing"

	"github.com/fenceview/fenceview/examples/internal/storytest"
)

func TestDecisionsReachTheServer(t *testing.T) {
	storytest.Run(t, run, []string{"-resource", "inventory:42"},
		"B wrote stock 7 with token 2",
		"A refused by the row: stale-token, token 1 < required 2",
		"server history: inventory:42 refused token 1 (required 2)",
		"reported by sqlguard:inventory",
		"server: inventory:42 accepted 1, rejected 1, high-water mark 2",
	)
}
