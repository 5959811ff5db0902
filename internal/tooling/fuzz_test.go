package tooling

import (
	"bufio"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// A fuzzTarget is one fuzz function and the package that holds it, as the
// go command names them: "./guard FuzzCheck".
type fuzzTarget struct{ pkg, name string }

func (f fuzzTarget) String() string { return f.pkg + " " + f.name }

// TestFuzzTargetsAreListed: .ci/fuzz-targets names every fuzz function of
// the module, and only those, so a new target is fuzzed in CI and by `task
// fuzz` from the day it is written.
func TestFuzzTargetsAreListed(t *testing.T) {
	listed := readFuzzTargets(t, filepath.Join(root, ".ci", "fuzz-targets"))
	found := findFuzzTargets(t)
	for _, f := range found {
		if !slices.Contains(listed, f) {
			t.Errorf("%s is not in .ci/fuzz-targets: add the line %q", f, f.String())
		}
	}
	for _, f := range listed {
		if !slices.Contains(found, f) {
			t.Errorf(".ci/fuzz-targets names %s, which no test file in %s defines", f, f.pkg)
		}
	}
}

// The list is read by one script, and both CI and the Taskfile run it.
func TestFuzzListHasOneReader(t *testing.T) {
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ci), "\nbash .ci/fuzz\n") {
		t.Error(".ci/run does not run bash .ci/fuzz")
	}
	tasks := readTaskfile(t)
	fuzz, ok := tasks.Tasks["fuzz"]
	if !ok {
		t.Fatal("Taskfile.yml has no fuzz task")
	}
	if len(fuzz.Cmds) != 1 || !strings.Contains(fuzz.Cmds[0].Cmd, "bash .ci/fuzz") {
		t.Errorf("task fuzz runs %+v, want one command running bash .ci/fuzz", fuzz.Cmds)
	}
}

var wholeDuration = regexp.MustCompile(`^[1-9][0-9]*[smh]$`)

func readFuzzTargets(t *testing.T, path string) []fuzzTarget {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var list []fuzzTarget
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 || len(fields) > 3 {
			t.Errorf("%s:%d: %q is not \"package Target [minimum fuzztime]\"", path, n, line)
			continue
		}
		if len(fields) == 3 && !wholeDuration.MatchString(fields[2]) {
			// .ci/fuzz compares minimums in whole seconds, minutes or hours.
			t.Errorf("%s:%d: minimum %q is not a whole number of s, m or h", path, n, fields[2])
		}
		target := fuzzTarget{fields[0], fields[1]}
		if slices.Contains(list, target) {
			t.Errorf("%s:%d: %s is listed twice", path, n, target)
		}
		list = append(list, target)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return list
}

// findFuzzTargets parses every test file that the go command would build
// here and returns its fuzz functions: func FuzzXxx(*testing.F).
func findFuzzTargets(t *testing.T) []fuzzTarget {
	t.Helper()
	var found []fuzzTarget
	fset := token.NewFileSet()
	for _, dir := range packageDirs(t) {
		files, err := filepath.Glob(filepath.Join(root, dir, "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			if ok, err := build.Default.MatchFile(filepath.Dir(file), filepath.Base(file)); err != nil || !ok {
				continue
			}
			f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if ok && fn.Recv == nil && isFuzzName(fn.Name.Name) && takesTestingF(fn) {
					found = append(found, fuzzTarget{goPattern(dir), fn.Name.Name})
				}
			}
		}
	}
	if len(found) == 0 {
		t.Fatal("found no fuzz functions at all")
	}
	return found
}

// isFuzzName is the go command's rule: Fuzz, then nothing or a character
// that is not a lower-case letter.
func isFuzzName(name string) bool {
	rest, ok := strings.CutPrefix(name, "Fuzz")
	if !ok {
		return false
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return rest == "" || !unicode.IsLower(r)
}

func takesTestingF(fn *ast.FuncDecl) bool {
	params := fn.Type.Params.List
	if len(params) != 1 || len(params[0].Names) > 1 {
		return false
	}
	star, ok := params[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "F"
}
