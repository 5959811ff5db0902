//go:build !wasm

package ed25519verify

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// The differential tests, compiled to WebAssembly: there PublicKey.Verify is
// the tables over ref10's arithmetic and Go's integer arithmetic is
// WebAssembly's. Natively, agree already holds that verifier to
// crypto/ed25519; this runs the same tests on the runtimes the guard ships
// to, wazero and Node's node:wasi.
var inWebAssembly = []string{
	"TestWycheproof", "TestVerifyAgreesWithStandardLibrary", "TestNonCanonicalEncodings",
	"TestNonCanonicalSIsRefused", "TestBaseTable", "TestSHA512MatchesStandardLibrary",
}

func TestInWebAssembly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package's tests for WebAssembly")
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "ed25519verify.test.wasm")
	cmd := exec.Command("go", "test", "-c", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the tests for WebAssembly: %v\n%s", err, out)
	}
	args := []string{"ed25519verify.test", "-test.v", "-test.run=^(" + strings.Join(inWebAssembly, "|") + ")$"}
	// Each runtime sees this directory as / (the tests read testdata/).
	passed := func(t *testing.T, out string) {
		t.Helper()
		for _, name := range inWebAssembly {
			if !strings.Contains(out, "--- PASS: "+name+" ") {
				t.Errorf("%s did not pass:\n%s", name, out)
			}
		}
	}

	t.Run("wazero", func(t *testing.T) {
		ctx := context.Background()
		rt := wazero.NewRuntime(ctx)
		defer rt.Close(ctx)
		wasi_snapshot_preview1.MustInstantiate(ctx, rt)
		code, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		cfg := wazero.NewModuleConfig().WithArgs(args...).WithEnv("PWD", "/").
			WithStdout(&out).WithStderr(&out).
			WithFSConfig(wazero.NewFSConfig().WithDirMount(dir, "/"))
		_, err = rt.InstantiateWithConfig(ctx, code, cfg)
		var exit *sys.ExitError
		if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 0) {
			t.Fatalf("%v\n%s", err, out.String())
		}
		passed(t, out.String())
	})

	t.Run("node", func(t *testing.T) {
		node, err := exec.LookPath("node")
		if err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("node is required in CI: %v", err)
			}
			t.Skipf("node not found: %v", err)
		}
		const script = `
const { readFileSync } = require('node:fs');
const { WASI } = require('node:wasi');
const [bin, dir, ...args] = process.argv.slice(1); // node -e: no script path
const wasi = new WASI({ version: 'preview1', args, env: { PWD: '/' }, preopens: { '/': dir }, returnOnExit: true });
WebAssembly.instantiate(readFileSync(bin), wasi.getImportObject()).then(({ instance }) => {
  process.exitCode = wasi.start(instance);
});`
		cmd := exec.Command(node, append([]string{"--no-warnings", "-e", script, bin, dir}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		passed(t, string(out))
	})
}
