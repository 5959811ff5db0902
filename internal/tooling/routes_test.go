package tooling

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fenceview/fenceview/internal/wire/op"
)

// A route literal in a client's source: a string or template that begins
// "/v1/", up to its first interpolation, concatenation or query.
var routeLiteral = regexp.MustCompile("[\"'`](/v1/[A-Za-z0-9_/-]*)")

// TestClientRoutesAreTheSpecs: every API route the Java, JavaScript and
// Python clients write is one package op declares (the part before the
// first name or id they fill in), so a client cannot call a route the
// server does not have, or keep one the server has renamed.
func TestClientRoutesAreTheSpecs(t *testing.T) {
	var known []string // each spec's path, cut at its first {placeholder}, and whole
	for _, s := range op.All {
		static, _, _ := strings.Cut(s.Path, "{")
		known = append(known, static, s.Path)
	}
	covers := func(lit string) bool {
		for _, k := range known {
			// A literal ending where a name goes ("/v1/locks/") is the
			// start of a spec; a whole literal ("/v1/locks/acquire-all")
			// is one, or the start of one ending in a name.
			if lit == k || (strings.HasSuffix(lit, "/") && strings.HasPrefix(k, lit)) || strings.HasPrefix(k, lit+"{") {
				return true
			}
		}
		return false
	}
	found := 0
	for _, dir := range []string{"clients/java/src/main", "clients/js/src", "clients/python/src"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return filepath.SkipDir
				}
				return err
			}
			if d.IsDir() || !(strings.HasSuffix(path, ".java") || strings.HasSuffix(path, ".ts") || strings.HasSuffix(path, ".py")) {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range routeLiteral.FindAllStringSubmatch(string(b), -1) {
				found++
				if !covers(m[1]) {
					rel, _ := filepath.Rel(root, path)
					t.Errorf("%s writes the route %q, which no operation of internal/wire/op declares", rel, m[1])
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if found < 20 {
		t.Fatalf("found %d route literals in the clients: the scan is broken", found)
	}
}
