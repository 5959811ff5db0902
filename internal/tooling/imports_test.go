package tooling

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/fenceview/fenceview"

// machinery is the server's inside: what users never import, and what the
// packages they do import must not pull in.
var machinery = []string{
	"internal/issuer", "internal/sqlite", "internal/httpapi", "internal/cluster",
	"internal/auth", "internal/signing", "internal/server", "internal/telemetry", "internal/demo",
}

// library is what a user's program imports to take locks or guard a
// resource; none of it may carry the server along.
var library = []string{"client", "guard", "wasm"}

// wiring are the packages that put the server together, the only ones
// that may name the issuer itself.
var wiring = []string{"internal/server", "internal/cluster", "cmd/fenceview"}

type goPackage struct {
	path string
	// The module's packages it imports, without the module prefix: its
	// own code's, and its tests' on top.
	imports, testImports []string
}

// modulePackages lists the packages of the module in dir (relative to
// root) with the module's packages each imports, its tests' imports
// included.
func modulePackages(t *testing.T, dir string) []goPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-f", "{{.ImportPath}}|{{join .Imports \",\"}}|{{join .TestImports \",\"}},{{join .XTestImports \",\"}}", "./...")
	cmd.Dir = root + "/" + dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list in %s: %v", dir, err)
	}
	var pkgs []goPackage
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Split(line, "|")
		if len(fields) != 3 {
			t.Fatalf("go list: %q", line)
		}
		pkgs = append(pkgs, goPackage{path: own(fields[0]), imports: owns(fields[1]), testImports: owns(fields[2])})
	}
	return pkgs
}

// own is a path of the module without the module's prefix ("" for the
// root), or "-" for a path of another module.
func own(path string) string {
	rest, ok := strings.CutPrefix(path, module)
	if !ok || (rest != "" && rest[0] != '/') {
		return "-"
	}
	return strings.TrimPrefix(rest, "/")
}

func owns(list string) []string {
	var paths []string
	for _, imp := range strings.Split(list, ",") {
		if p := own(imp); imp != "" && p != "-" {
			paths = append(paths, p)
		}
	}
	return paths
}

func under(path, dir string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }

// Imports run one way: the domain (the root package) needs nothing of the
// module but the guard's rule; nothing imports a command; the packages
// users import to take locks and guard resources never pull in the server;
// adapters take the root's interfaces, not the issuer.
func TestImportsRunOneWay(t *testing.T) {
	pkgs := append(modulePackages(t, "."), modulePackages(t, "bench")...)
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		for _, imp := range append(p.imports, p.testImports...) {
			if under(imp, "cmd") && !under(p.path, imp) {
				t.Errorf("%s imports the command %s: a command is an end, never a library", p.path, imp)
			}
		}
		for _, imp := range p.imports {
			if imp == "internal/issuer" && !slices.Contains(wiring, p.path) {
				t.Errorf("%s imports internal/issuer: adapters take the root's service interfaces; only %v wire the issuer in", p.path, wiring)
			}
			if p.path == "" && imp != "guard" {
				t.Errorf("the root package imports %s: the domain may need only the guard's rule", imp)
			}
			for _, lib := range library {
				for _, m := range machinery {
					// A package's test server (client/fenceviewtest) is a server.
					if under(p.path, lib) && !strings.HasSuffix(p.path, "test") && under(imp, m) {
						t.Errorf("%s imports %s: the library users import must not carry the server", p.path, imp)
					}
				}
			}
		}
	}
}
