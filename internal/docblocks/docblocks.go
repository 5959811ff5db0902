// Package docblocks reads the fenced code blocks of Markdown files, so that
// tests can compile and run the examples the docs show, in every language
// they are written in.
package docblocks

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
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

// After returns the code of the first ```lang block after the line
// heading ("## Install", say) of markdown, each line ending in a newline.
func After(markdown, heading, lang string) (string, error) {
	i := strings.Index(markdown, "\n"+heading+"\n")
	if i < 0 {
		return "", fmt.Errorf("no heading %q", heading)
	}
	rest := markdown[i:]
	fence := "\n```" + lang + "\n"
	start := strings.Index(rest, fence)
	if start < 0 {
		return "", fmt.Errorf("no %s block after %q", lang, heading)
	}
	rest = rest[start+len(fence):]
	end := strings.Index(rest, "```")
	if end < 0 {
		return "", fmt.Errorf("the %s block after %q never ends", lang, heading)
	}
	return rest[:end], nil
}

// Run runs the program name with args in dir ("": this process's), with
// env added to this process's environment, for at most limit, and returns
// what it printed to stdout and stderr: how a test runs a block written
// out as a program.
func Run(dir string, limit time.Duration, env []string, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	return cmd.CombinedOutput()
}
