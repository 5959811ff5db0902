// Package storytest runs an example's story in its test and checks what
// it printed.
package storytest

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

// Run runs an example's run with args and fails the test unless it
// returned nil and its output holds every line of want. It returns the
// output, for further checks.
func Run(t testing.TB, run func(ctx context.Context, args []string, stdout io.Writer) error, args []string, want ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), args, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
	return out.String()
}
