package freshclone

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fenceview/fenceview/internal/docblocks"
)

// goSnippets returns the ```go blocks of README.md and docs/*.md; one
// after a docblocks.NotRun line is compiled only.
func goSnippets(t *testing.T, root string) []docblocks.Block {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	rel := []string{"README.md"}
	for _, f := range files {
		r, _ := filepath.Rel(root, f)
		rel = append(rel, r)
	}
	blocks, err := docblocks.Read(root, rel, "go")
	if err != nil {
		t.Fatal(err)
	}
	return blocks
}

// The names a snippet may use without declaring them, as the prose around
// it does: one package-level variable each, so a snippet's own := shadows
// them.
const prelude = `
var (
	ctx          context.Context
	db           *sql.DB
	token        int64
	d            guard.Decision
	fv           *client.Client
	mux          *http.ServeMux
	stockHandler http.Handler
	r, req       *http.Request
	url          string
	body         io.Reader
	send         func(context.Context, *http.Request) error
	marks        *sqlguard.Marks
	h2           wasm.Handle
	t2           int64
	pub          []byte
	sigText      string
	wasmBytes    []byte
)
`

// The packages snippets may name, by the name they use.
var snippetImports = map[string]string{
	"context": "context", "errors": "errors", "fmt": "fmt", "http": "net/http", "io": "io", "log": "log",
	"sql": "database/sql", "time": "time",
	"client": "github.com/fenceview/fenceview/client", "guard": "github.com/fenceview/fenceview/guard",
	"sqlguard": "github.com/fenceview/fenceview/guard/sqlguard", "httpguard": "github.com/fenceview/fenceview/guard/httpguard",
	"redisguard": "github.com/fenceview/fenceview/guard/redisguard", "goredis": "github.com/fenceview/fenceview/guard/redisguard/goredis",
	"callguard": "github.com/fenceview/fenceview/guard/callguard", "wasm": "github.com/fenceview/fenceview/wasm",
	"os": "os", "strings": "strings", "docenv": "github.com/fenceview/fenceview/internal/freshclone/docenv",
	"redis": "github.com/redis/go-redis/v9", "extism": "github.com/extism/go-sdk",
	"s3guard": "github.com/fenceview/fenceview/guard/s3guard", "s3": "github.com/aws/aws-sdk-go-v2/service/s3",
}

// Every Go snippet of README.md and docs/*.md compiles against this tree
// and runs against a real server. A snippet that is a whole file (it
// starts with "package") is built as it is; any other is the body of a
// function returning error, with the prelude's names declared and its own
// locals marked used (a snippet shows a step, not a whole program). The
// functions are built into one program whose main starts docenv's world,
// gives the prelude's names their values and runs every snippet not marked
// notRun, its server address pointing at the real server. Errors point at
// the Markdown file and line.
func TestDocSnippetsRun(t *testing.T) {
	root := repoRoot(t)
	snippets := goSnippets(t, root)
	if len(snippets) < 5 {
		t.Fatalf("found %d Go snippets in README.md and docs/: the extraction is broken", len(snippets))
	}
	tmp := t.TempDir()
	overlay := map[string]string{}
	var pkgs []string
	addFile := func(pkg, name, src string) {
		real := filepath.Join(tmp, fmt.Sprintf("%d-%s", len(overlay), name))
		if err := os.WriteFile(real, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		// The package lives in the module only in the overlay, so it uses
		// the module's go.mod and go.sum and writes nothing to the tree.
		overlay[filepath.Join(root, "internal", "freshclone", "_snippets", pkg, name)] = real
		if !slices.Contains(pkgs, pkg) {
			pkgs = append(pkgs, pkg)
		}
	}
	var bodies, table strings.Builder
	bodies.WriteString(prelude)
	ran := 0
	for i, s := range snippets {
		if strings.HasPrefix(strings.TrimSpace(s.Code), "package ") {
			addFile(fmt.Sprintf("whole%d", i), "main.go", fmt.Sprintf("//line %s:%d\n%s", s.File, s.Line, s.Code))
			continue
		}
		code := strings.ReplaceAll(s.Code, `"`+docsServer+`"`, "serverURL")
		fmt.Fprintf(&bodies, "\nfunc snippet%d() error {\n//line %s:%d\n%s%s\treturn nil\n}\n", i, s.File, s.Line, code, "\n")
		if s.Run {
			fmt.Fprintf(&table, "\t{%q, snippet%d},\n", fmt.Sprintf("%s:%d", s.File, s.Line), i)
			ran++
		}
	}
	bodies.WriteString(strings.Replace(runner, "\t// SNIPPETS\n", table.String(), 1))
	src, err := markUsed(bodies.String())
	if err != nil {
		t.Fatalf("a snippet does not parse: %v", err)
	}
	addFile("fragments", "fragments.go", "package main\n\n"+imports(t, src)+src)
	ov, _ := json.Marshal(map[string]any{"Replace": overlay})
	ovFile := filepath.Join(tmp, "overlay.json")
	os.WriteFile(ovFile, ov, 0o644)
	for _, p := range pkgs {
		bin := filepath.Join(tmp, p)
		cmd := exec.Command("go", "build", "-overlay", ovFile, "-o", bin, "./internal/freshclone/_snippets/"+p)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("Go snippets of README.md and docs/ do not compile:\n%s", out)
		}
		if p != "fragments" {
			continue // a whole program is only built: it says how it is run
		}
		out, err := exec.Command(bin).CombinedOutput()
		if err != nil {
			t.Fatalf("Go snippets of README.md and docs/ do not run against a real server (%v):\n%s", err, out)
		}
		if want := fmt.Sprintf("ran %d snippets", ran); !strings.Contains(string(out), want) {
			t.Fatalf("the snippets' program did not say %q:\n%s", want, out)
		}
	}
}

// docsServer is the server address the docs' snippets name; they run
// against docenv's server instead.
const docsServer = "http://127.0.0.1:8080"

// runner is the snippets' main: every runnable snippet in turn, each with a
// deadline of its own and fresh values for the prelude's names; a panic or
// an error is a failure that names the snippet's file and line.
const runner = `
var serverURL string

var snippets = []struct {
	at  string
	run func() error
}{
	// SNIPPETS
}

func main() {
	setup, stop := context.WithTimeout(context.Background(), 2*time.Minute)
	defer stop()
	env, err := docenv.Start(setup)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the snippets' world:", err)
		os.Exit(2)
	}
	defer env.Close()
	serverURL = env.URL
	failed := 0
	for _, s := range snippets {
		if err := runOne(env, s.run); err != nil {
			fmt.Printf("%s: %v\n", s.at, err)
			failed++
		}
	}
	if failed > 0 {
		env.Close()
		os.Exit(1)
	}
	fmt.Printf("ran %d snippets\n", len(snippets))
}

func runOne(env *docenv.Env, run func() error) (err error) {
	var cancel context.CancelFunc
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, fv, marks, token, t2 = env.DB, env.Client, env.Marks, env.Token, env.Token
	sigText, pub, url, send = env.Signature, env.PublicKey, env.Downstream+"/stock", env.Send
	r, req, body = env.Request(ctx), env.Request(ctx), strings.NewReader("7")
	mux, stockHandler, wasmBytes = http.NewServeMux(), http.NotFoundHandler(), wasm.ExtismBytes()
	d, h2 = guard.Decision{}, wasm.Handle{}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return run()
}
`

// markUsed appends `_ = name` for every local a snippet function declares
// at its top level, so a snippet that shows a value without using it
// compiles. Positions stay where //line put them: only lines are added
// after each snippet's code.
func markUsed(src string) (string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "fragments.go", "package p\n"+src, parser.SkipObjectResolution)
	if err != nil {
		return "", err
	}
	type insert struct {
		at    int
		names []string
	}
	var inserts []insert
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok {
			continue
		}
		var names []string
		add := func(id *ast.Ident) {
			if id.Name != "_" && !slices.Contains(names, id.Name) {
				names = append(names, id.Name)
			}
		}
		for _, st := range fn.Body.List {
			switch st := st.(type) {
			case *ast.AssignStmt:
				if st.Tok == token.DEFINE {
					for _, e := range st.Lhs {
						if id, ok := e.(*ast.Ident); ok {
							add(id)
						}
					}
				}
			case *ast.DeclStmt:
				if g, ok := st.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
					for _, spec := range g.Specs {
						for _, id := range spec.(*ast.ValueSpec).Names {
							add(id)
						}
					}
				}
			}
		}
		last := fn.Body.List[len(fn.Body.List)-1] // the wrapper's return nil
		inserts = append(inserts, insert{fset.Position(last.Pos()).Offset - len("package p\n"), names})
	}
	var b strings.Builder
	prev := 0
	for _, in := range inserts {
		b.WriteString(src[prev:in.at])
		for _, n := range in.names {
			fmt.Fprintf(&b, "_ = %s; ", n)
		}
		prev = in.at
	}
	b.WriteString(src[prev:])
	return b.String(), nil
}

// imports is the import block for the packages src names.
func imports(t *testing.T, src string) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+src, 0)
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && id.Obj == nil && snippetImports[id.Name] != "" {
				used[id.Name] = true
			}
		}
		return true
	})
	var b bytes.Buffer
	b.WriteString("import (\n")
	for name := range used {
		fmt.Fprintf(&b, "\t%s %q\n", name, snippetImports[name])
	}
	b.WriteString(")\n")
	return b.String()
}

// repoRoot is the module's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}
