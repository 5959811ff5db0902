// Package benchenv is what benchmarks share: the sizes they run at, read
// from the environment so that one command line scales a benchmark up or
// down without editing it, and the CPU time they report. For example
//
//	FENCEVIEW_BENCH_ROWS=10000000 go test ./internal/sqlite -run '^$' -bench Rejections
//
// It is for tests only.
package benchenv

import (
	"os"
	"strconv"
)

// Int returns the positive integer in the environment variable name, or
// def when it is unset or not a positive integer.
func Int(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
