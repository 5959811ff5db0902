package wasm

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	extism "github.com/extism/go-sdk"

	"github.com/fenceview/fenceview/guard"
)

// The Extism module is tested on the conformance table in two real Extism
// hosts: the Go SDK here, the JavaScript SDK in Node (extism_node_test.go).
// Its functions speak JSON, so each step becomes one call, and the answer
// becomes the code the table expects: 0 accepted, the required token for a
// stale refusal, -5 for a bad signature, and for a failed call (invalid
// input) the code its message names.

// extismCall is one step as an Extism call: the function and its input.
// The JSON is written by hand so that the id's bytes reach the plugin as
// they are (encoding/json would replace invalid UTF-8).
func extismCall(s step) (fn string, input []byte) {
	var b strings.Builder
	b.WriteString(`{"resourceId":`)
	b.WriteString(jsonString(s.ID))
	b.WriteString(`,"token":` + strconv.FormatInt(s.Token, 10))
	switch s.Op {
	case "check", "check_handle": // no handles in the Extism functions
		fn = "check"
	case "seed":
		fn = "seed"
	case "high_water":
		fn = "high_water"
	case "trust":
		fn = "trust_key"
		b.WriteString(`,"publicKey":"` + base64.RawURLEncoding.EncodeToString(s.Key) + `"`)
	case "check_signed":
		fn = "check_signed"
		if s.Sig != nil {
			b.WriteString(`,"signature":"` + base64.RawURLEncoding.EncodeToString(s.Sig) + `"`)
		}
	}
	b.WriteString(`}`)
	return fn, []byte(b.String())
}

// jsonString quotes raw bytes as a JSON string, escaping only what JSON
// requires and leaving other bytes (invalid UTF-8 included) untouched.
func jsonString(raw []byte) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range raw {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// extismOutcome turns an Extism answer into the table's code.
func extismOutcome(fn string, out []byte, callErr error) (outcome, error) {
	if callErr != nil {
		msg := callErr.Error()
		switch {
		case strings.Contains(msg, "invalid resource id"), strings.Contains(msg, "not UTF-8"):
			return outcome{Code: CodeInvalidResource}, nil
		case strings.Contains(msg, "invalid fencing token"):
			return outcome{Code: CodeInvalidToken}, nil
		case strings.Contains(msg, "invalid signing public key"):
			return outcome{Code: CodeInvalidKey}, nil
		case strings.Contains(msg, "too many trusted signing keys"):
			return outcome{Code: CodeTooManyKeys}, nil
		}
		return outcome{}, fmt.Errorf("%s failed: %v", fn, callErr)
	}
	var a struct {
		Accepted      *bool  `json:"accepted"`
		Reason        string `json:"reason"`
		Required      *int64 `json:"required"`
		HighWaterMark *int64 `json:"highWaterMark"`
	}
	if err := json.Unmarshal(out, &a); err != nil {
		return outcome{}, fmt.Errorf("%s answered %q: %v", fn, out, err)
	}
	switch fn {
	case "trust_key":
		if string(out) != "{}" {
			return outcome{}, fmt.Errorf("trust_key answered %q, want {}", out)
		}
		return outcome{}, nil
	case "seed", "high_water":
		if a.HighWaterMark == nil {
			return outcome{}, fmt.Errorf("%s answered %q", fn, out)
		}
		return outcome{Code: *a.HighWaterMark}, nil
	}
	switch {
	case a.Accepted == nil:
		return outcome{}, fmt.Errorf("%s answered %q", fn, out)
	case *a.Accepted:
		if string(out) != `{"accepted":true}` {
			return outcome{}, fmt.Errorf("%s answered %q", fn, out)
		}
		return outcome{Code: 0}, nil
	case a.Required == nil:
		return outcome{}, fmt.Errorf("%s refused without required: %q", fn, out)
	case a.Reason == guard.ReasonBadSignature:
		return outcome{Code: CodeBadSignature}, nil
	case a.Reason == "stale-token":
		return outcome{Code: *a.Required}, nil
	}
	return outcome{}, fmt.Errorf("%s answered %q", fn, out)
}

// compareCodes is compare without Prev: the Extism functions answer an
// accepted check with {"accepted":true} alone.
func compareCodes(t *testing.T, host string, c confCase, got, want []outcome) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %s: %d answers, want %d", host, c.Name, len(got), len(want))
	}
	for i, s := range c.Steps {
		if got[i].Code != want[i].Code {
			t.Errorf("%s: %s: step %d %s(%q, %d) = %d, native %d", host, c.Name, i, s.Op, s.ID, s.Token, got[i].Code, want[i].Code)
		}
	}
}

var extismCompiled = sync.OnceValues(func() (*extism.CompiledPlugin, error) {
	manifest := extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: ExtismBytes()}}}
	return extism.NewCompiledPlugin(context.Background(), manifest, extism.PluginConfig{EnableWasi: true}, nil)
})

// newExtismPlugin is a fresh plugin instance: no marks, no keys.
func newExtismPlugin(t testing.TB) *extism.Plugin {
	t.Helper()
	compiled, err := extismCompiled()
	if err != nil {
		t.Fatal(err)
	}
	p, err := compiled.Instance(context.Background(), extism.PluginInstanceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

func runExtismGo(t *testing.T, c confCase) []outcome {
	p := newExtismPlugin(t)
	var out []outcome
	for _, s := range c.Steps {
		fn, in := extismCall(s)
		_, res, err := p.Call(fn, in)
		o, err := extismOutcome(fn, res, err)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		out = append(out, o)
	}
	return out
}

func TestExtismGoSDKConformance(t *testing.T) {
	for _, c := range conformanceTable() {
		compareCodes(t, "extism-go", c, runExtismGo(t, c), reference(t, c))
	}
}

// reference is the native guard's answer to a case (see TestConformance).
func reference(t *testing.T, c confCase) []outcome { return runNative(false)(t, c) }

// Invalid input fails the call with an Extism error and is never answered
// as a decision; it changes nothing.
func TestExtismInvalidInput(t *testing.T) {
	p := newExtismPlugin(t)
	if _, out, err := p.Call("check", []byte(`{"resourceId":"a","token":5}`)); err != nil || string(out) != `{"accepted":true}` {
		t.Fatalf("check: %q, %v", out, err)
	}
	for _, in := range []string{
		``, `not json`, `[]`, `{"resourceId":"a","token":"6"}`, `{"resourceId":"a","token":6.5}`, `{"resourceId":"a","token":6e0}`,
		`{"resourceId":"a","token":99999999999999999999}`, `{"resourceId":"a","token":0}`, `{"resourceId":"a","token":-6}`,
		`{"resourceId":"","token":6}`, `{"token":6}`, `{"resourceId":"a\u0000","token":6}`, "{\"resourceId\":\"a\xff\",\"token\":6}",
		`{"resourceId":"` + strings.Repeat("x", 161) + `","token":6}`, `{"resourceId":"a","token":6`, strings.Repeat(" ", 70000),
	} {
		for _, fn := range []string{"check", "check_signed", "seed"} {
			if _, out, err := p.Call(fn, []byte(in)); err == nil {
				t.Errorf("%s(%q) = %q, want an error", fn, in, out)
			}
		}
	}
	for _, in := range []string{`{}`, `{"publicKey":""}`, `{"publicKey":"AAAA"}`, `{"publicKey":"` + strings.Repeat("A", 42) + `="}`,
		`{"publicKey":"` + strings.Repeat("A", 42) + `B"}`, `{"publicKey":"` + strings.Repeat("+", 43) + `"}`} {
		if _, out, err := p.Call("trust_key", []byte(in)); err == nil {
			t.Errorf("trust_key(%q) = %q, want an error", in, out)
		}
	}
	// Nothing moved, and the plugin still is not in signed mode.
	if _, out, err := p.Call("high_water", []byte(`{"resourceId":"a"}`)); err != nil || string(out) != `{"highWaterMark":5}` {
		t.Fatalf("high_water: %q, %v", out, err)
	}
	if _, out, err := p.Call("check", []byte(`{"resourceId":"a","token":5,"extra":[1,{"x":null}]}`)); err != nil || string(out) != `{"accepted":true}` {
		t.Fatalf("check with an unknown field: %q, %v", out, err)
	}
}
