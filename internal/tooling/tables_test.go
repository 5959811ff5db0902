package tooling

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// TestMarkdownTablesAreWhole: every table in the Markdown files (docs/,
// the READMEs, CONTRIBUTING.md, RATIONALE.md) renders as one table, as a
// GitHub-flavoured Markdown parser reads it. Every line outside code that
// starts with "|" must be a line of a table: a paragraph or a blank line
// in the middle of a table, or a delimiter row whose cells do not match
// the header's, leaves the rows after it as text.
func TestMarkdownTablesAreWhole(t *testing.T) {
	files := markdownFiles(t)
	if len(files) < 10 {
		t.Fatalf("found %d Markdown files: the walk is broken", len(files))
	}
	tables := 0
	for _, f := range files {
		src, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		n, stray := tableLines(src)
		tables += n
		for _, line := range stray {
			t.Errorf("%s:%d: a table row outside any table (a table broken by a paragraph or a blank line, or a header and delimiter row that disagree):\n%s",
				f, line, strings.Split(string(src), "\n")[line-1])
		}
	}
	if tables < 20 {
		t.Errorf("found %d tables in the Markdown files: the parser is not reading tables", tables)
	}
}

// TestTableCheckFindsABrokenTable: the check above catches each way a
// table breaks, and passes a whole one.
func TestTableCheckFindsABrokenTable(t *testing.T) {
	for _, c := range []struct {
		name, md string
		stray    []int
	}{
		{"whole", "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\nText after.\n", nil},
		{"in a list", "- item\n\n  | a | b |\n  |---|---|\n  | 1 | 2 |\n", nil},
		{"in code", "```\n| not | a table |\n```\n", nil},
		{"a paragraph inside", "| a | b |\n|---|---|\n| 1 | 2 |\n\nA paragraph.\n| 3 | 4 |\n", []int{6}},
		{"a blank line inside", "| a | b |\n|---|---|\n| 1 | 2 |\n\n| 3 | 4 |\n| 5 | 6 |\n", []int{5, 6}},
		{"delimiter disagrees", "| a | b |\n|---|\n| 1 | 2 |\n", []int{1, 2, 3}},
	} {
		n, stray := tableLines([]byte(c.md))
		if !slices.Equal(stray, c.stray) || (c.stray == nil && c.name != "in code" && n != 1) {
			t.Errorf("%s: %d tables, stray rows at lines %v, want %v", c.name, n, stray, c.stray)
		}
	}
}

// tableLines parses src and returns how many tables it has and the lines
// (1-based) that start with "|" outside code and outside every table.
func tableLines(src []byte) (tables int, stray []int) {
	doc := goldmark.New(goldmark.WithExtensions(extension.Table)).Parser().Parse(text.NewReader(src))
	lineOf := func(offset int) int { return bytes.Count(src[:offset], []byte("\n")) + 1 }
	covered := map[int]bool{}
	cover := func(from, to int) {
		for l := lineOf(from); l <= lineOf(to); l++ {
			covered[l] = true
		}
	}
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n.Kind() {
		case extast.KindTable:
			// A table's extent: from its first cell's text to its last,
			// the delimiter row between them.
			tables++
			first, last := -1, -1
			ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
				if t, ok := c.(*ast.Text); ok && entering {
					if first < 0 || t.Segment.Start < first {
						first = t.Segment.Start
					}
					last = max(last, t.Segment.Stop)
				}
				return ast.WalkContinue, nil
			})
			if first >= 0 {
				cover(first, max(last-1, first))
			}
			return ast.WalkSkipChildren, nil
		case ast.KindFencedCodeBlock, ast.KindCodeBlock, ast.KindHTMLBlock:
			lines := n.Lines()
			for i := 0; i < lines.Len(); i++ {
				s := lines.At(i)
				cover(s.Start, max(s.Stop-1, s.Start))
			}
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	for i, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "|") && !covered[i+1] {
			stray = append(stray, i+1)
		}
	}
	return tables, stray
}

// markdownFiles are the repository's Markdown files: the top directory's,
// docs/ and the READMEs, none deeper than clients/java/README.md.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, pattern := range []string{"*.md", "*/*.md", "*/*/*.md"} {
		found, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range found {
			rel, _ := filepath.Rel(root, f)
			out = append(out, filepath.ToSlash(rel))
		}
	}
	return out
}
