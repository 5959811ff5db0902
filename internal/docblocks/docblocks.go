// Package docblocks reads the fenced code blocks of Markdown files, so that
// tests can compile and run the examples the docs show, in every language
// they are written in.
package docblocks

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// NotRun is the Markdown comment that, on the line before a block, keeps
// it from running (it is still compiled where its language compiles); the
// text beside the block says why to readers.
const NotRun = "<!-- not run:"

// Block is one fenced code block.
type Block struct {
	File string // as given to Read, relative to its root
	Line int    // of the block's first line of code, counted from 1
	Code string // its lines, each ending in a newline
	Run  bool   // false after a NotRun line
}

// Read returns, in order, the blocks of files (paths relative to root)
// whose info string is one of langs ("go", "java", "js", ...).
func Read(root string, files []string, langs ...string) ([]Block, error) {
	var out []Block
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		var cur *Block
		prev := ""
		for i, line := range strings.Split(string(data), "\n") {
			trim := strings.TrimSpace(line)
			switch {
			case cur == nil && strings.HasPrefix(trim, "```") && slices.Contains(langs, trim[3:]):
				cur = &Block{File: f, Line: i + 2, Run: !strings.HasPrefix(strings.TrimSpace(prev), NotRun)}
			case cur != nil && strings.HasPrefix(trim, "```"):
				out = append(out, *cur)
				cur = nil
			case cur != nil:
				cur.Code += line + "\n"
			}
			prev = line
		}
	}
	return out, nil
}
