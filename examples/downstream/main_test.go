package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestDownstreamRefusesStaleWriter(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-lease", "300ms"}, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		`B locked with token 2 and wrote: 200 {"resourceId":"inventory:42","stock":7,"token":2}`,
		"A wakes up and writes: refused, stale-token, token 1 < required 2",
		`a write without a token: 400 {"error":"missing or invalid fencing token"}`,
		"stock of inventory:42: 7",
		"refusals reported to fenceview: 1",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
