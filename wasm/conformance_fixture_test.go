package wasm

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"
)

var updateConformanceFixture = flag.Bool("update-conformance", false,
	"write the conformance table to the Node package's fixture")

// The Node package replays this package's conformance table through its
// WebAssembly-backed middleware and the server's fence. It cannot import Go,
// so it reads a JSON copy; this test keeps that copy from drifting.
const conformanceFixture = "../clients/js/test/fixtures/guard-conformance.json"

func TestConformanceFixtureIsCurrent(t *testing.T) {
	want, err := json.MarshalIndent(conformanceTable(), "", " ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	if *updateConformanceFixture {
		if err := os.WriteFile(conformanceFixture, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(conformanceFixture)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not the conformance table; run go test ./wasm -run TestConformanceFixtureIsCurrent -update-conformance", conformanceFixture)
	}
}
