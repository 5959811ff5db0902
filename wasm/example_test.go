package wasm_test

import (
	"context"
	"fmt"

	"github.com/fenceview/fenceview/wasm"
)

func ExampleGuard_Check() {
	ctx := context.Background()
	g, err := wasm.New(ctx, wasm.Config{Shards: 1})
	if err != nil {
		panic(err)
	}
	defer g.Close(ctx)

	g.Check("inventory:42", 42) // the new holder writes first
	d, _ := g.Check("inventory:42", 41)
	fmt.Println(d.Accepted, d.Reason, d.Required)

	h, _ := g.Handle("inventory:42") // resolve once, check many times
	d, _ = g.CheckHandle(h, 43)
	fmt.Println(d.Accepted, d.Required)
	// Output:
	// false stale-token 42
	// true 42
}
