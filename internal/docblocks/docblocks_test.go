package docblocks

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestReadKeepsLinesAndNotRun(t *testing.T) {
	dir := t.TempDir()
	md := "# Title\n\n```go\nx := 1\n\ny := 2\n```\n\n<!-- not run: needs a cluster -->\n```js\nrun()\n```\n\n```sh\nls\n```\n  ```java\n  int a;\n  ```\n"
	if err := os.WriteFile(filepath.Join(dir, "a.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Read(dir, []string{"a.md"}, "go", "js", "java")
	if err != nil {
		t.Fatal(err)
	}
	want := []Block{
		{File: "a.md", Line: 4, Code: "x := 1\n\ny := 2\n", Run: true},
		{File: "a.md", Line: 11, Code: "run()\n", Run: false},
		{File: "a.md", Line: 18, Code: "  int a;\n", Run: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Read = %+v\nwant %+v", got, want)
	}
	if _, err := Read(dir, []string{"missing.md"}, "go"); err == nil {
		t.Fatal("a missing file read without an error")
	}
}

func TestAfterFindsTheBlockUnderItsHeading(t *testing.T) {
	md := "# T\n\n## Install\n\nThen:\n\n```go\nx\n```\n\n```sh\nmake\nmake install\n```\n\n## Use\n\n```sh\nrun\n```\n"
	for _, c := range []struct{ heading, lang, want string }{
		{"## Install", "sh", "make\nmake install\n"},
		{"## Install", "go", "x\n"},
		{"## Use", "sh", "run\n"},
	} {
		if got, err := After(md, c.heading, c.lang); err != nil || got != c.want {
			t.Errorf("After(%q, %q) = %q, %v; want %q", c.heading, c.lang, got, err, c.want)
		}
	}
	for _, c := range []struct{ md, heading, lang string }{
		{md, "## Missing", "sh"},
		{md, "## Use", "go"},
		{md, "## Inst", "sh"},
		{"## Open\n```sh\nnever closed\n", "## Open", "sh"},
	} {
		if got, err := After(c.md, c.heading, c.lang); err == nil {
			t.Errorf("After(%q, %q) = %q without an error", c.heading, c.lang, got)
		}
	}
}

func TestRunAddsToTheEnvironmentAndBoundsTheTime(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(dir, time.Minute, []string{"DOCBLOCKS_TEST=seen"}, sh, "-c", `echo "$DOCBLOCKS_TEST in $(pwd -P)"; echo oops >&2`)
	if err != nil {
		t.Fatal(err)
	}
	if want := "seen in " + dir + "\noops\n"; string(out) != want {
		t.Errorf("Run printed %q, want %q", out, want)
	}
	if _, err := Run(dir, time.Minute, nil, sh, "-c", "exit 3"); err == nil {
		t.Error("a failing program ran without an error")
	}
	if _, err := Run(dir, 50*time.Millisecond, nil, sh, "-c", "exec sleep 30"); err == nil {
		t.Error("a program past its limit ran without an error")
	}
}
