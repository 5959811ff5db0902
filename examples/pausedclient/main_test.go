package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestPausedClientIsFencedOut(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-lease", "300ms"}, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	// A fresh server issues 1 to A and 2 to B.
	for _, want := range []string{
		"A locked inventory:42 with token 1",
		"B locked inventory:42 with token 2",
		"A's write refused: stale-token, token 1 < required 2",
		"inventory 42: stock 7, fence_token 2",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(out.String(), "lease lost") {
		t.Errorf("A's client did not report the lost lease:\n%s", out.String())
	}
}

func TestBadFlags(t *testing.T) {
	if err := run(context.Background(), []string{"-lease", "soon"}, &bytes.Buffer{}); err == nil {
		t.Fatal("bad flag accepted")
	}
}
