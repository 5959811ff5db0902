// Command gen writes internal/api/openapi.json from internal/api/openapi.yaml; run it with
// `go generate ./internal/api`.
package main

import (
	"log"
	"os"

	"github.com/fenceview/fenceview/internal/api/internal/convert"
)

func main() {
	src, err := os.ReadFile("openapi.yaml")
	if err != nil {
		log.Fatal(err)
	}
	out, err := convert.YAMLToJSON(src)
	if err != nil {
		log.Fatalf("openapi.yaml: %v", err)
	}
	if err := os.WriteFile("openapi.json", out, 0o644); err != nil {
		log.Fatal(err)
	}
}
