// Command gen writes the published guard modules (guard.wasm,
// guard-extism.wasm, guard-http.wasm) and the versions of the tools that
// built them (guard.wasm.goversion, wasm-opt.version) into
// ../internal/modules, from the wasm package's directory (go generate). It needs binaryen's wasm-opt
// (apt-get install binaryen).
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
	goVersion, err := build.GoVersion(ctx, ".")
	if err != nil {
		return err
	}
	optVersion, err := build.WasmOptVersion(ctx)
	if err != nil {
		return err
	}
	for _, m := range build.Modules {
		if err := build.Build(ctx, ".", m, filepath.Join("..", "internal", "modules", m.File)); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join("..", "internal", "modules", "guard.wasm.goversion"), []byte(goVersion+"\n"), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join("..", "internal", "modules", "wasm-opt.version"), []byte(optVersion+"\n"), 0o644)
}
