package wasm

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The JavaScript Extism SDK (@extism/extism, pinned in
// testdata/extism-node/package-lock.json) runs the conformance table in
// Node. Install it with
//
//	npm ci --prefix wasm/testdata/extism-node
//
// (.ci/run does); without it the test skips, and fails under CI.
func TestExtismJSSDKConformance(t *testing.T) {
	node := lookNode(t, "the Extism JS SDK run")
	dir, err := filepath.Abs(filepath.Join("testdata", "extism-node"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@extism", "extism")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must install the Extism JS SDK (npm ci --prefix wasm/testdata/extism-node): %v", err)
		}
		t.Skipf("the Extism JS SDK is not installed (npm ci --prefix wasm/testdata/extism-node): %v", err)
	}
	type call struct {
		Fn    string `json:"fn"`
		Input []byte `json:"input"`
	}
	type jsCase struct {
		Name  string `json:"name"`
		Calls []call `json:"calls"`
	}
	cases := conformanceTable()
	var calls []jsCase
	for _, c := range cases {
		jc := jsCase{Name: c.Name}
		for _, s := range c.Steps {
			fn, in := extismCall(s)
			jc.Calls = append(jc.Calls, call{fn, in})
		}
		calls = append(calls, jc)
	}
	tmp := t.TempDir()
	table, err := json.Marshal(calls)
	if err != nil {
		t.Fatal(err)
	}
	wasmPath, callsPath := filepath.Join(tmp, "guard-extism.wasm"), filepath.Join(tmp, "calls.json")
	if err := os.WriteFile(wasmPath, ExtismBytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(callsPath, table, 0o644); err != nil {
		t.Fatal(err)
	}
	var got map[string][]struct {
		OK  *string `json:"ok"`
		Err *string `json:"err"`
	}
	runNodeJSON(t, &got, exec.Command(node, "conformance.js", wasmPath, callsPath), dir)
	for _, c := range cases {
		answers := got[c.Name]
		if len(answers) != len(c.Steps) {
			t.Fatalf("%s: %d answers for %d steps", c.Name, len(answers), len(c.Steps))
		}
		var outs []outcome
		for i, a := range answers {
			fn, _ := extismCall(c.Steps[i])
			var o outcome
			var err error
			if a.Err != nil {
				o, err = extismOutcome(fn, nil, errors.New(*a.Err))
			} else {
				o, err = extismOutcome(fn, []byte(*a.OK), nil)
			}
			if err != nil {
				t.Fatalf("%s: step %d: %v", c.Name, i, err)
			}
			outs = append(outs, o)
		}
		compareCodes(t, "extism-js", c, outs, reference(t, c))
	}
}
