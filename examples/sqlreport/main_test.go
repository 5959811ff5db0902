package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestDecisionsReachTheServer(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-resource", "inventory:42"}, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"B wrote stock 7 with token 2",
		"A refused by the row: stale-token, token 1 < required 2",
		"server history: inventory:42 refused token 1 (required 2)",
		"reported by sqlguard:inventory",
		"server: inventory:42 accepted 1, rejected 1, high-water mark 2",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
