// Package build builds guard.wasm from the guest package, the same way for
// go generate and for the test that checks the committed module is current.
package build

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// GuestPackage is the reactor that becomes guard.wasm.
const GuestPackage = "github.com/fenceview/fenceview/wasm/internal/guest"

// env pins everything but the Go version that changes the output bytes:
// the target, no cgo, no stray GOFLAGS or GOWASM features, and no switching
// to another toolchain behind our back.
func env() []string {
	return append(os.Environ(),
		"GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0",
		"GOFLAGS=", "GOWASM=", "GOEXPERIMENT=", "GOTOOLCHAIN=local",
	)
}

// Guest builds the reactor into the file out. dir is any directory inside
// the module.
func Guest(ctx context.Context, dir, out string) error {
	// -trimpath and -buildvcs=false keep paths and VCS state out of the
	// bytes, so any checkout with the same Go version builds the same module.
	cmd := exec.CommandContext(ctx, "go", "build",
		"-buildmode=c-shared", "-trimpath", "-buildvcs=false",
		"-o", out, GuestPackage)
	cmd.Dir = dir
	cmd.Env = env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s: %v\n%s", GuestPackage, err, stderr.String())
	}
	return nil
}

// GoVersion is the version of the go command that Guest runs, e.g. "go1.26.8".
func GoVersion(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "env", "GOVERSION")
	cmd.Dir = dir
	cmd.Env = env()
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %v", err)
	}
	return strings.TrimSpace(string(out)), nil
}
