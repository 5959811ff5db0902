package main

import (
	"testing"

	"github.com/fenceview/fenceview/examples/internal/storytest"
)

func TestDownstreamRefusesStaleWriter(t *testing.T) {
	storytest.Run(t, run, []string{"-lease", "300ms"},
		`B locked with token 2 and wrote: 200 {"resourceId":"inventory:42","stock":7,"token":2}`,
		"A wakes up and writes: refused, stale-token, token 1 < required 2",
		`a write without a token: 400 {"error":"missing or invalid fencing token: send one X-Fencing-Token header`,
		"stock of inventory:42: 7",
		"refusals reported to fenceview: 1",
	)
}
