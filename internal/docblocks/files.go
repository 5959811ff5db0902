package docblocks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WriteFile writes content to path (a block as a program, a file of a
// project made from the docs), or fails t.
func WriteFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Says fails t for each of words that the Markdown file no longer says:
// what a test that follows the docs' words checks first, so the two
// cannot drift apart.
func Says(t testing.TB, file string, words ...string) {
	t.Helper()
	md, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range words {
		if !strings.Contains(string(md), w) {
			t.Errorf("%s no longer says %q: this test follows those words", filepath.Base(file), w)
		}
	}
}
