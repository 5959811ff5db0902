package tooling

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// root is the repository's top directory, seen from this package.
const root = "../.."

// packageDirs returns every directory of the module that holds Go files,
// as slash-separated paths relative to root ("." for the root itself),
// leaving out testdata, hidden directories, node_modules and nested
// modules (bench/ is its own module).
func packageDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		name := d.Name()
		if rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		if rel != "." {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		gofiles, err := filepath.Glob(filepath.Join(path, "*.go"))
		if err != nil {
			return err
		}
		if len(gofiles) > 0 {
			dirs = append(dirs, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 10 {
		t.Fatalf("found only %d package directories under %s: %v", len(dirs), root, dirs)
	}
	return dirs
}

// goPattern is how the go command names the package in dir: "." or "./dir".
func goPattern(dir string) string {
	if dir == "." {
		return "."
	}
	return "./" + dir
}
