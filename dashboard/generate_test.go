package dashboard

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The committed *_templ.go must be what the pinned templ generates from the
// .templ files beside them: regenerate into a copy and compare.
func TestTemplOutputIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the templ generator")
	}
	sources, err := filepath.Glob("*.templ")
	if err != nil || len(sources) == 0 {
		t.Fatalf("no .templ files: %v", err)
	}
	dir := t.TempDir()
	for _, src := range sources {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, src), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "tool", "templ", "generate", "-path", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go tool templ generate: %v\n%s", err, out)
	}
	for _, src := range sources {
		gen := src[:len(src)-len(".templ")] + "_templ.go"
		want, err := os.ReadFile(filepath.Join(dir, gen))
		if err != nil {
			t.Fatalf("templ wrote no %s: %v", gen, err)
		}
		got, err := os.ReadFile(gen)
		if err != nil {
			t.Fatalf("%s is not committed: %v", gen, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is out of date: run `go tool templ generate` and commit the result", gen)
		}
	}
	// A *_templ.go without its source would be dead code no one regenerates.
	generated, _ := filepath.Glob("*_templ.go")
	if len(generated) != len(sources) {
		t.Errorf("%d generated files for %d .templ sources", len(generated), len(sources))
	}
}
