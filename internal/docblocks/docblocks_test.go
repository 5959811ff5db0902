package docblocks

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
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
