// Command gen writes guard.wasm and guard.wasm.goversion in the current
// directory (the wasm package, via go generate).
package main

import (
	"context"
	"fmt"
	"os"

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
	if err := build.Guest(ctx, ".", "guard.wasm"); err != nil {
		return err
	}
	return os.WriteFile("guard.wasm.goversion", []byte(version+"\n"), 0o644)
}
