package tooling

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/template"

	"go.yaml.in/yaml/v3"
)

// The Taskfile is checked here rather than by running Task: Task is not a
// Debian or npm package, and building it through the module proxy (or
// pinning it as a tool in go.mod, which brings a hundred modules and moves
// gRPC) costs CI more than these checks. Every task is meant to be a plain
// command you could type (the Taskfile says so); these tests hold it to
// that.

type taskfile struct {
	Version string          `yaml:"version"`
	Tasks   map[string]task `yaml:"tasks"`
}

type task struct {
	Desc      string            `yaml:"desc"`
	Cmds      []command         `yaml:"cmds"`
	Vars      map[string]string `yaml:"vars"`
	Env       map[string]string `yaml:"env"`
	Dir       string            `yaml:"dir"`
	Sources   []string          `yaml:"sources"`
	Generates []string          `yaml:"generates"`
}

// A command is a shell line, a call of another task, or a shell line run
// once for each item of a list.
type command struct {
	Cmd  string   `yaml:"cmd"`
	Task string   `yaml:"task"`
	For  []string `yaml:"for"`
}

func (c *command) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		c.Cmd = n.Value
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: a command is a string or a mapping", n.Line)
	}
	// yaml's KnownFields does not reach a custom unmarshaler: refuse what
	// this test does not understand, rather than pass it unchecked.
	for i := 0; i < len(n.Content); i += 2 {
		if k := n.Content[i].Value; k != "cmd" && k != "task" && k != "for" {
			return fmt.Errorf("line %d: command field %q is not checked by internal/tooling: teach it", n.Content[i].Line, k)
		}
	}
	type plain command
	return n.Decode((*plain)(c))
}

func readTaskfile(t *testing.T) taskfile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "Taskfile.yml"))
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var tf taskfile
	if err := dec.Decode(&tf); err != nil {
		t.Fatalf("Taskfile.yml: %v", err)
	}
	return tf
}

// shellLines returns a task's commands as the shell will see them: Task's
// templates filled in (no CLI arguments, each item of a for list), and
// calls of other tasks left out.
func shellLines(t *testing.T, name string, tk task) []string {
	t.Helper()
	var lines []string
	for _, c := range tk.Cmds {
		if c.Cmd == "" {
			continue
		}
		items := c.For
		if items == nil {
			items = []string{""}
		}
		for _, item := range items {
			vars := map[string]any{"CLI_ARGS": "", "ITEM": item}
			for k, v := range tk.Vars {
				vars[k] = v
			}
			lines = append(lines, render(t, name, c.Cmd, vars))
		}
	}
	return lines
}

// render fills in a command the way Task does, with the one template
// function the Taskfile uses (Task's default, from sprig).
func render(t *testing.T, name, cmd string, vars map[string]any) string {
	t.Helper()
	funcs := template.FuncMap{"default": func(d any, v ...any) any {
		if len(v) == 0 || v[0] == nil || v[0] == "" {
			return d
		}
		return v[0]
	}}
	tpl, err := template.New(name).Funcs(funcs).Option("missingkey=zero").Parse(cmd)
	if err != nil {
		t.Fatalf("task %s: %v", name, err)
	}
	var out strings.Builder
	if err := tpl.Execute(&out, vars); err != nil {
		t.Fatalf("task %s: %v", name, err)
	}
	if strings.Contains(out.String(), "<no value>") {
		t.Errorf("task %s uses a variable that has no value and no default: %q", name, cmd)
	}
	return out.String()
}

// TestTaskfileCommands: every task says what it does, calls only tasks
// that exist, and runs bash that parses and names paths that exist (or
// that git ignores, being what the command builds).
func TestTaskfileCommands(t *testing.T) {
	tf := readTaskfile(t)
	if tf.Version != "3" {
		t.Fatalf("Taskfile.yml version %q, want 3", tf.Version)
	}
	if len(tf.Tasks) < 5 {
		t.Fatalf("Taskfile.yml has only %d tasks", len(tf.Tasks))
	}
	for name, tk := range tf.Tasks {
		if tk.Desc == "" {
			t.Errorf("task %s has no desc, so task --list hides it", name)
		}
		if len(tk.Cmds) == 0 {
			t.Errorf("task %s runs nothing", name)
		}
		for _, c := range tk.Cmds {
			if (c.Cmd == "") == (c.Task == "") {
				t.Errorf("task %s: a command must be either a shell line or a task call: %+v", name, c)
			}
			if _, ok := tf.Tasks[c.Task]; c.Task != "" && !ok {
				t.Errorf("task %s calls task %s, which does not exist", name, c.Task)
			}
		}
		for _, glob := range append(slices.Clone(tk.Sources), tk.Generates...) {
			if m, _ := filepath.Glob(filepath.Join(root, glob)); len(m) == 0 {
				t.Errorf("task %s: %s matches no file", name, glob)
			}
		}
		for _, line := range shellLines(t, name, tk) {
			if out, err := exec.Command("bash", "-n", "-c", line).CombinedOutput(); err != nil {
				t.Errorf("task %s: bash -n: %v\n%s\n%s", name, err, out, line)
			}
			for _, p := range pathsIn(line) {
				if _, err := os.Stat(filepath.Join(root, p)); err == nil || gitIgnores(t, p) {
					continue
				}
				t.Errorf("task %s names %s, which does not exist", name, p)
			}
		}
	}
}

// pathsIn returns the words of a shell line that name files of the
// repository: those with a slash that are not URLs, flags, patterns or
// built from shell variables, nor absolute; "./x/..." is the directory ./x.
func pathsIn(line string) []string {
	var paths []string
	words := strings.FieldsFunc(line, func(r rune) bool { return strings.ContainsRune(" \t\n;|&()<>", r) })
	for _, w := range words {
		w = strings.Trim(w, `'"`)
		if !strings.Contains(w, "/") || strings.Contains(w, "://") || strings.ContainsAny(w[:1], "-^/") ||
			strings.ContainsAny(w, "$*{}=") {
			continue
		}
		w = strings.TrimSuffix(w, "/...")
		if w == "." || w == "..." || w == "" {
			continue
		}
		paths = append(paths, w)
	}
	return paths
}

// gitIgnores reports whether git ignores path: a build output such as bin/.
func gitIgnores(t *testing.T, path string) bool {
	t.Helper()
	cmd := exec.Command("git", "check-ignore", "-q", "--no-index", path)
	cmd.Dir = root
	err := cmd.Run()
	if err == nil {
		return true
	}
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
		return false
	}
	t.Fatalf("git check-ignore %s: %v", path, err)
	return false
}

// TestGenerateTaskRunsEveryGenerator: `task generate` regenerates all that
// is generated: every package with a //go:generate line and every
// directory of .templ files. (The freshness of each artifact is checked by
// the tests beside it: TestTemplOutputIsCurrent, TestJSONIsCurrent,
// TestModulesAreCurrent.)
func TestGenerateTaskRunsEveryGenerator(t *testing.T) {
	tf := readTaskfile(t)
	gen, ok := tf.Tasks["generate"]
	if !ok {
		t.Fatal("Taskfile.yml has no generate task")
	}
	var goGenerate, templPaths []string
	templAll := false
	for _, line := range shellLines(t, "generate", gen) {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "go" && f[1] == "generate":
			goGenerate = append(goGenerate, f[2:]...)
		case len(f) >= 4 && f[0] == "go" && f[1] == "tool" && f[2] == "templ" && f[3] == "generate":
			i := slices.Index(f, "-path")
			if i < 0 {
				templAll = true
			} else if i+1 < len(f) {
				templPaths = append(templPaths, f[i+1])
			}
		default:
			t.Errorf("task generate runs %q, which this test does not know", line)
		}
	}
	for _, dir := range packageDirs(t) {
		if hasGoGenerate(t, dir) && !matchesPattern(dir, goGenerate) {
			t.Errorf("%s has a //go:generate line, but task generate runs go generate only for %v", dir, goGenerate)
		}
		if templs, _ := filepath.Glob(filepath.Join(root, dir, "*.templ")); len(templs) > 0 &&
			!templAll && !slices.Contains(templPaths, dir) {
			t.Errorf("%s has .templ files, but task generate runs templ only for %v", dir, templPaths)
		}
	}
}

func hasGoGenerate(t *testing.T, dir string) bool {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, dir, "*.go"))
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "//go:generate ") {
				f.Close()
				return true
			}
		}
		f.Close()
	}
	return false
}

// matchesPattern reports whether one of the go command's package patterns
// ("./...", "./wasm/...", "./api") names the package in dir.
func matchesPattern(dir string, patterns []string) bool {
	for _, p := range patterns {
		p = strings.TrimPrefix(p, "./")
		if prefix, ok := strings.CutSuffix(p, "..."); ok {
			prefix = strings.TrimSuffix(prefix, "/")
			if prefix == "" || dir == prefix || strings.HasPrefix(dir, prefix+"/") {
				return true
			}
		} else if p == dir || (p == "." && dir == ".") {
			return true
		}
	}
	return false
}
