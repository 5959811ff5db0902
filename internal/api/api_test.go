package api

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/fenceview/fenceview/internal/api/internal/convert"
)

// TestJSONIsCurrent rebuilds openapi.json from openapi.yaml and compares.
func TestJSONIsCurrent(t *testing.T) {
	src, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want, err := convert.YAMLToJSON(src)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want, JSON()) {
		t.Fatal("internal/api/openapi.json is stale: run go generate ./internal/api")
	}
}

// TestDocumentIsValid loads the document as OpenAPI 3.1 and validates it.
func TestDocumentIsValid(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(JSON())
	if err != nil {
		t.Fatal(err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi %q, want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestREADMETableAgrees: the API tables of the README and of
// docs/reference.md list exactly the document's operations.
func TestREADMETableAgrees(t *testing.T) {
	for _, file := range []string{"../../README.md", "../../docs/reference.md"} {
		t.Run(file, func(t *testing.T) { checkTable(t, file) })
	}
}

func checkTable(t *testing.T, file string) {
	doc, err := openapi3.NewLoader().LoadFromData(JSON())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			want[method+" "+path] = true
		}
	}
	readme, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(GET|POST|PUT|PATCH|DELETE) (/[^`?]*)")
	got := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(readme), -1) {
		for _, path := range strings.Split(m[2], ", ") { // "GET /a`, `GET /b" rows are rare; keep it simple
			got[m[1]+" "+strings.TrimSpace(path)] = true
		}
	}
	for op := range want {
		if !got[op] {
			t.Errorf("%s: the API table lacks %s", file, op)
		}
	}
	for op := range got {
		if !want[op] {
			t.Errorf("%s: the API table has %s, which internal/api/openapi.yaml does not", file, op)
		}
	}
}
