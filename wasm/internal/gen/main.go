// Command gen writes modules/guard.wasm and modules/guard.wasm.goversion
// below the current directory (the wasm package, via go generate).
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/fenceview/fenceview/wasm/internal/build"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	version, err := build.GoVersion(ctx, ".")
	if err != nil {
		return err
	}
	if err := build.Guest(ctx, ".", filepath.Join("modules", "guard.wasm")); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join("modules", "guard.wasm.goversion"), []byte(version+"\n"), 0o644)
}
