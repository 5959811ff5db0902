package tooling

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestContributingListsWhatShortSkips: CONTRIBUTING.md's table of what
// `go test -short` skips names every function that calls testing.Short(),
// in a row for its package, so the fast loop's blind spots are written
// down.
func TestContributingListsWhatShortSkips(t *testing.T) {
	rows := shortTable(t)
	fset := token.NewFileSet()
	found := 0
	for _, dir := range packageDirs(t) {
		files, _ := filepath.Glob(filepath.Join(root, dir, "*.go"))
		for _, file := range files {
			f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil || !callsTestingShort(fn.Body) {
					continue
				}
				found++
				row := rowFor(rows, dir)
				if row == "" {
					t.Errorf("%s calls testing.Short() in %s, but CONTRIBUTING.md's -short table has no row for %s", dir, fn.Name.Name, dir)
				} else if !strings.Contains(row, "`"+fn.Name.Name+"`") {
					t.Errorf("CONTRIBUTING.md's -short row for %s does not name %s, which calls testing.Short()", dir, fn.Name.Name)
				}
			}
		}
	}
	if found == 0 {
		t.Fatal("found no testing.Short() calls at all")
	}
}

func callsTestingShort(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return !found
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Short" {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "testing" {
				found = true
			}
		}
		return !found
	})
	return found
}

// shortTable returns the rows of the table under "`-short` skips".
func shortTable(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "CONTRIBUTING.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "`-short` skips")
	if !ok {
		t.Fatal("CONTRIBUTING.md has no \"`-short` skips\" table")
	}
	var rows []string
	for _, line := range strings.Split(rest, "\n")[1:] {
		if strings.HasPrefix(line, "|") {
			rows = append(rows, line)
		} else if len(rows) > 0 {
			break
		}
	}
	return rows
}

// rowFor returns the row whose first column names dir in a code span.
func rowFor(rows []string, dir string) string {
	for _, row := range rows {
		cells := strings.Split(row, "|")
		if len(cells) > 2 && strings.Contains(cells[1], "`"+dir+"`") {
			return row
		}
	}
	return ""
}
