package tooling

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestREADMELayoutListsEveryPackage: the first column of the README's
// layout table names every package directory (and every client under
// clients/), and nothing that does not exist, so a newcomer can find where
// a change goes.
func TestREADMELayoutListsEveryPackage(t *testing.T) {
	listed := layoutPaths(t, filepath.Join(root, "README.md"))
	want := packageDirs(t)
	clients, err := os.ReadDir(filepath.Join(root, "clients"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range clients {
		if c.IsDir() && !slices.Contains(want, "clients/"+c.Name()) {
			want = append(want, "clients/"+c.Name())
		}
	}
	for _, dir := range want {
		if dir != "." && !slices.Contains(listed, dir) {
			t.Errorf("README.md's layout table does not list %s/", dir)
		}
	}
	for _, p := range listed {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("README.md's layout table lists %s/, which does not exist", p)
		}
	}
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// layoutPaths returns the paths in code spans in the first column of the
// table under "## Layout", without their trailing slash.
func layoutPaths(t *testing.T, readme string) []string {
	t.Helper()
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Layout\n")
	if !ok {
		t.Fatalf("%s has no ## Layout section", readme)
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var paths []string
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || strings.TrimSpace(cells[0]) != "" {
			continue
		}
		for _, m := range codeSpan.FindAllStringSubmatch(cells[1], -1) {
			paths = append(paths, strings.TrimSuffix(m[1], "/"))
		}
	}
	if len(paths) == 0 {
		t.Fatalf("%s: no paths in the layout table", readme)
	}
	return paths
}
