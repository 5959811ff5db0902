package modules

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestEveryModuleIsPublishedWithItsHash(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range All() {
		if seen[m.Name()] || !strings.HasSuffix(m.Name(), ".wasm") || len(m.Bytes()) < 8 {
			t.Fatalf("module %q: duplicate, misnamed or empty", m.Name())
		}
		seen[m.Name()] = true
		sum := sha256.Sum256(m.Bytes())
		if want := `"` + hex.EncodeToString(sum[:]) + `"`; m.ETag() != want {
			t.Fatalf("%s: ETag %s, want %s", m.Name(), m.ETag(), want)
		}
		if string(m.Bytes()[:4]) != "\x00asm" {
			t.Fatalf("%s is not a WebAssembly module", m.Name())
		}
	}
	if !seen["guard.wasm"] || !seen["guard-extism.wasm"] || !seen["guard-http.wasm"] {
		t.Fatalf("guard.wasm, guard-extism.wasm or guard-http.wasm is not published: %v", seen)
	}
}

// The HTTP API and the dashboard serve modules; they must not link a
// WebAssembly runtime, nor each other.
func TestServingDoesNotLinkARuntime(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for pkg, banned := range map[string][]string{
		"../../internal/httpapi": {"tetratelabs/wazero", "fenceview/dashboard", "fenceview/wasm\n"},
		// The dashboard shares internal/httpapi/request with the API, not
		// the API itself.
		"../../dashboard": {"tetratelabs/wazero", "fenceview/internal/httpapi\n", "fenceview/wasm\n"},
	} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		for _, b := range banned {
			if strings.Contains(string(out), b) {
				t.Errorf("%s depends on %s", pkg, strings.TrimSpace(b))
			}
		}
	}
}

// Hosts download, compile and pool these modules: each stays within 1.9 MB
// (the Go runtime alone is about 1.7 MB of it).
func TestModulesFitTheBudget(t *testing.T) {
	const budget = 1_900_000
	for _, m := range All() {
		if n := len(m.Bytes()); n > budget {
			t.Errorf("%s is %d bytes, over the budget of %d", m.Name(), n, budget)
		}
	}
}

// aws-sdk-go-v2 links only where guard/s3guard is used: never into the
// WebAssembly modules, the server, the client or the other guards.
func TestObjectStoreSDKLinksOnlyIntoItsGuard(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	wasi := []string{"GOOS=wasip1", "GOARCH=wasm"}
	for _, c := range []struct {
		pkg  string
		env  []string
		want bool // the guard itself, so the test would see the SDK
	}{
		{"../../guard/s3guard", nil, true},
		{"../../wasm/internal/guest", wasi, false},
		{"../../wasm/internal/extism", wasi, false},
		{"../../wasm/internal/httpguest", wasi, false},
		{"../../cmd/fenceview", nil, false},
		{"../../client", nil, false},
		{"../../guard", nil, false},
		{"../../guard/sqlguard", nil, false},
		{"../../guard/redisguard", nil, false},
		{"../../guard/httpguard", nil, false},
		{"../../wasm", nil, false},
	} {
		cmd := exec.Command("go", "list", "-deps", c.pkg)
		cmd.Env = append(os.Environ(), c.env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", c.pkg, err, out)
		}
		if strings.Contains(string(out), "github.com/aws/aws-sdk-go-v2/service/s3\n") != c.want {
			t.Errorf("%s: depends on the AWS SDK's S3 module: %v, want %v", c.pkg, !c.want, c.want)
		}
	}
}
