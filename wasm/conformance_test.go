package wasm

import (
	"bytes"
	"context"
	"crypto/ed25519"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/ledger"
	"github.com/fenceview/fenceview/internal/guardtest"
)

// The conformance table: one list of guard cases, every one run on a fresh
// guard by every implementation: the native guard.Guard (by id and by handle),
// this package's wazero host, and Node's node:wasi loading the same
// guard.wasm. Expected results are ABI codes (docs/wasm-abi.md): for check,
// 0 accepted, > 0 the required token, < 0 invalid input; for seed and
// high_water the mark or a negative code.

type step struct {
	Op    string `json:"op"` // check, check_handle, seed, high_water, trust, check_signed
	ID    []byte `json:"id"` // bytes, so invalid UTF-8 survives JSON (base64)
	Token int64  `json:"token,string"`
	Sig   []byte `json:"sig,omitempty"` // check_signed: the raw signature
	Key   []byte `json:"key,omitempty"` // trust: the raw public key
	Want  int64  `json:"want,string"`
}

type confCase struct {
	Name  string `json:"name"`
	Steps []step `json:"steps"`
}

// outcome is what one implementation answered to one step. Prev is, for an
// accepted check, the mark the token was compared with (Decision.Required).
type outcome struct {
	Code int64 `json:"code,string"`
	Prev int64 `json:"prev,string"`
}

func chk(id string, token, want int64) step {
	return step{Op: "check", ID: []byte(id), Token: token, Want: want}
}
func chkH(id string, token, want int64) step {
	return step{Op: "check_handle", ID: []byte(id), Token: token, Want: want}
}
func seed(id string, token, want int64) step {
	return step{Op: "seed", ID: []byte(id), Token: token, Want: want}
}
func hwm(id string, want int64) step    { return step{Op: "high_water", ID: []byte(id), Want: want} }
func trust(key []byte, want int64) step { return step{Op: "trust", Key: key, Want: want} }
func chkS(id string, token int64, sig []byte, want int64) step {
	return step{Op: "check_signed", ID: []byte(id), Token: token, Sig: sig, Want: want}
}

// Signing keys for the signed cases: fixed seeds, so the table is the same
// on every run and in every runtime.
var (
	keyA = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize))
	keyB = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, ed25519.SeedSize)) // "another server"
)

func pub(k ed25519.PrivateKey) []byte { return k.Public().(ed25519.PublicKey) }

// sign is an issuer's signature of token on id (the signed-token message).
func sign(k ed25519.PrivateKey, id string, token int64) []byte {
	return ed25519.Sign(k, ledger.AppendMessage(nil, id, token))
}

func signedCases() []confCase {
	good := sign(keyA, "a", 5)
	flipped := bytes.Clone(good)
	flipped[10] ^= 0x40
	var keys []step
	for i := 0; i < ledger.MaxTrustedKeys; i++ {
		keys = append(keys, trust(bytes.Repeat([]byte{byte(i + 1)}, 32), 0))
	}
	keys = append(keys, trust(bytes.Repeat([]byte{99}, 32), CodeTooManyKeys), trust(bytes.Repeat([]byte{1}, 32), 0))
	return []confCase{
		{"signed: a trusted key turns unsigned checks away", []step{
			chk("a", 5, 0), trust(pub(keyA), 0), chk("a", 6, CodeBadSignature), chkH("a", 7, CodeBadSignature),
			chk("b", 1, CodeBadSignature), hwm("a", 5), hwm("b", 0),
			chkS("a", 6, sign(keyA, "a", 6), 0), hwm("a", 6),
		}},
		{"signed: forgeries are refused and move nothing", []step{
			trust(pub(keyA), 0),
			chkS("a", 5, sign(keyB, "a", 5), CodeBadSignature),           // another server's key
			chkS("a", 5, sign(keyA, "b", 5), CodeBadSignature),           // a signature of resource b
			chkS("a", 6, good, CodeBadSignature),                         // a signature of token 5 with 6
			chkS("a", 5, good[:63], CodeBadSignature),                    // truncated
			chkS("a", 5, nil, CodeBadSignature),                          // missing
			chkS("a", 5, append(bytes.Clone(good), 0), CodeBadSignature), // over-long
			chkS("a", 5, flipped, CodeBadSignature),                      // corrupted
			chkS("a", 5, make([]byte, 64), CodeBadSignature),             // zeros
			hwm("a", 0),
			chkS("a", 5, good, 0), hwm("a", 5),
		}},
		{"signed: a remembered verification is for one token and resource", []step{
			trust(pub(keyA), 0),
			chkS("a", 5, good, 0), chkS("a", 5, good, 0), // the second is a comparison
			chkS("a", 4, sign(keyA, "a", 4), 5), // genuine but stale
			chkS("a", 5, sign(keyA, "a", 4), CodeBadSignature),
			chkS("b", 5, good, CodeBadSignature),
			chkS("a", 7, sign(keyA, "a", 7), 0), chkS("a", 5, good, 7), hwm("a", 7),
		}},
		{"signed: rotated keys both verify", []step{
			trust(pub(keyA), 0), trust(pub(keyB), 0), trust(pub(keyA), 0),
			chkS("a", 1, sign(keyA, "a", 1), 0), chkS("a", 2, sign(keyB, "a", 2), 0), chkS("a", 1, sign(keyB, "a", 1), 2),
		}},
		{"signed: no key trusted, signatures are ignored", []step{
			chkS("a", 5, nil, 0), chkS("a", 6, []byte("junk"), 0), chkS("a", 4, good, 6),
		}},
		{"signed: invalid input is refused before the signature", []step{
			trust(pub(keyA), 0),
			chkS("", 5, good, CodeInvalidResource), chkS("a\x00", 5, good, CodeInvalidResource), chkS(id161, 5, good, CodeInvalidResource),
			chkS("a", 0, good, CodeInvalidToken), chkS("a", -5, nil, CodeInvalidToken), hwm("a", 0),
		}},
		{"signed: seeding works in signed mode", []step{
			trust(pub(keyA), 0), seed("a", 10, 10), chkS("a", 5, good, 10), chkS("a", 10, sign(keyA, "a", 10), 0),
		}},
		{"signed: keys that are not 32 bytes", []step{
			trust(nil, CodeInvalidKey), trust(make([]byte, 31), CodeInvalidKey), trust(make([]byte, 33), CodeInvalidKey),
			chk("a", 1, 0), // still not in signed mode
		}},
		{"signed: at most 16 keys", keys},
		{"signed: malleated and non-canonical signatures", malleated(good)},
	}
}

// malleated is one case of signatures that are a valid one of token 5 on
// "a" by keyA, changed the ways verifiers have been fooled by (RFC 8032
// §5.1.7 and §8.4, Wycheproof): S plus the group order (the same scalar,
// not canonical), S equal to the order, R's sign bit flipped, R as a
// non-canonical encoding, the identity as R with S = 0. Every one is
// refused; the runtimes' verifiers must refuse them as crypto/ed25519 does.
func malleated(good []byte) []step {
	order := [32]byte{0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10} // L, little-endian
	plusOrder := bytes.Clone(good)
	carry := 0
	for i := 0; i < 32; i++ { // S + L < 2^253: S < L < 2^252
		v := int(good[32+i]) + int(order[i]) + carry
		plusOrder[32+i], carry = byte(v), v>>8
	}
	sIsOrder := append(bytes.Clone(good[:32]), order[:]...)
	signFlipped := bytes.Clone(good)
	signFlipped[31] ^= 0x80
	nonCanonicalR := bytes.Clone(good) // y = p + 1: the identity, not canonical
	nonCanonicalR[0] = 0xee
	for i := 1; i < 31; i++ {
		nonCanonicalR[i] = 0xff
	}
	nonCanonicalR[31] = 0x7f
	identityR := make([]byte, 64)
	identityR[0] = 1
	return []step{
		trust(pub(keyA), 0),
		chkS("a", 5, plusOrder, CodeBadSignature),
		chkS("a", 5, sIsOrder, CodeBadSignature),
		chkS("a", 5, signFlipped, CodeBadSignature),
		chkS("a", 5, nonCanonicalR, CodeBadSignature),
		chkS("a", 5, identityR, CodeBadSignature),
		hwm("a", 0),
		chkS("a", 5, good, 0),
	}
}

const maxToken = 1<<63 - 1

var (
	id160     = strings.Repeat("x", 160)
	id161     = strings.Repeat("x", 161)
	euro160   = strings.Repeat("€", 53) + "a" // 159 + 1 bytes of multi-byte text
	euro161   = strings.Repeat("€", 53) + "ab"
	overLarge = strings.Repeat("y", 300) // longer than the host's scratch buffer
)

func conformanceTable() []confCase {
	var many []step
	for i := 1; i <= 40; i++ {
		many = append(many, chk(fmt.Sprintf("res-%02d", i), int64(i*10), 0))
	}
	for i := 1; i <= 40; i++ {
		many = append(many, chk(fmt.Sprintf("res-%02d", i), int64(i*10-1), int64(i*10)))
		many = append(many, hwm(fmt.Sprintf("res-%02d", i), int64(i*10)))
	}

	cases := []confCase{
		{"first token accepted", []step{hwm("a", 0), chk("a", 5, 0), hwm("a", 5)}},
		{"equal token accepted", []step{chk("a", 5, 0), chk("a", 5, 0), hwm("a", 5)}},
		{"stale token refused", []step{chk("a", 10, 0), chk("a", 9, 10), chk("a", 1, 10), hwm("a", 10), chk("a", 11, 0), hwm("a", 11)}},
		{"largest token", []step{chk("a", maxToken, 0), chk("a", maxToken-1, maxToken), chk("a", maxToken, 0)}},
		{"resources are independent", []step{chk("a", 100, 0), chk("b", 1, 0), chk("b", 2, 0), chk("a", 99, 100), hwm("b", 2), hwm("c", 0)}},
		{"many resources", many},
		{"seeding", []step{seed("a", 10, 10), seed("a", 3, 10), chk("a", 9, 10), chk("a", 10, 0), seed("b", 7, 7), hwm("b", 7), chk("b", 8, 0), seed("b", 8, 8)}},
		{"seed never decides", []step{seed("a", 5, 5), chk("a", 5, 0), seed("a", maxToken, maxToken), chk("a", maxToken, 0)}},
		{"empty id", []step{chk("", 1, -1), seed("", 1, -1), hwm("", -1), chkH("", 1, -1)}},
		{"longest id", []step{chk(id160, 1, 0), hwm(id160, 1), chk(euro160, 3, 0), chk(euro160, 2, 3)}},
		{"161-byte id", []step{chk(id161, 1, -1), seed(id161, 1, -1), hwm(id161, -1), chk(euro161, 1, -1), chk(overLarge, 1, -1), hwm(id160, 0)}},
		{"invalid UTF-8", []step{
			chk("\xff", 1, -1), chk("ok\xc3", 1, -1), chk("\xc0\x80", 1, -1), chk("\xed\xa0\x80", 1, -1),
			seed("bad\xfe", 4, -1), hwm("bad\xfe", -1), chkH("a\x80b", 1, -1),
		}},
		{"control characters", []step{
			chk("\x00", 1, -1), chk("tab\there", 1, -1), chk("line\n", 1, -1), chk("del\x7f", 1, -1),
			chk("c1\u0085", 1, -1), chk("\u009f", 1, -1), seed("x\x1b", 2, -1), chkH("\r", 1, -1),
		}},
		{"token zero and negative", []step{
			chk("a", 0, -2), chk("a", -1, -2), chk("a", -maxToken-1, -2), seed("a", 0, -2), seed("a", -7, -2),
			chkH("a", 0, -2), hwm("a", 0),
		}},
		{"id is checked before token", []step{chk("", 0, -1), seed(id161, -1, -1), chkH("\xff", 0, -1)}},
		{"invalid input changes nothing", []step{
			chk("a", 5, 0), chk("a", 0, -2), seed("a", -1, -2), chk("a\x00", 100, -1), hwm("a", 5), chk("a", 4, 5),
		}},
		{"unicode ids", []step{
			chk("заказ/42 🧾", 7, 0), chk("注文-1", 3, 0), chk("заказ/42 🧾", 6, 7), hwm("注文-1", 3),
			// NFC and NFD spell different byte strings: different resources.
			chk("caf\u00e9", 9, 0), chk("cafe\u0301", 1, 0), hwm("caf\u00e9", 9),
			chk("zero\u200bwidth", 2, 0), // a format character, not a control one
		}},
		{"by handle", []step{
			chkH("h", 5, 0), chk("h", 4, 5), chkH("h", 5, 0), seed("h", 9, 9), chkH("h", 8, 9), chkH("h", 9, 0), hwm("h", 9),
			chkH("other", 1, 0), hwm("other", 1),
		}},
	}
	return append(cases, signedCases()...)
}

// codeOf maps the native guard's errors to ABI codes.
func codeOf(err error) int64 {
	switch {
	case errors.Is(err, guard.ErrInvalidResourceID):
		return CodeInvalidResource
	case errors.Is(err, guard.ErrInvalidToken):
		return CodeInvalidToken
	case errors.Is(err, guard.ErrUnknownHandle):
		return CodeUnknownHandle
	case errors.Is(err, guard.ErrInvalidPublicKey):
		return CodeInvalidKey
	case errors.Is(err, guard.ErrTooManyKeys):
		return CodeTooManyKeys
	}
	return CodeInternal
}

func decisionOutcome(d guard.Decision, err error) outcome {
	switch {
	case err != nil:
		return outcome{Code: codeOf(err)}
	case d.Accepted:
		return outcome{Code: 0, Prev: d.Required}
	case d.Reason == guard.ReasonBadSignature:
		return outcome{Code: CodeBadSignature}
	}
	return outcome{Code: d.Required}
}

func markOutcome(v int64, err error) outcome {
	if err != nil {
		return outcome{Code: codeOf(err)}
	}
	return outcome{Code: v}
}

// runner runs one case on a fresh guard.
type runner func(t *testing.T, c confCase) []outcome

// steps is what a runner drives step by step, H its handle type: the
// native guard.Guard, a bare ledger.Ledger (guardtest.Ledger) or this package's
// Guard.
type steps[H any] interface {
	Check(id string, token int64) (guard.Decision, error)
	Handle(id string) (H, error)
	CheckHandle(h H, token int64) (guard.Decision, error)
	Seed(id string, token int64) (int64, error)
	HighWater(id string) (int64, error)
	CheckSignedBytes(id string, token int64, sig []byte) (guard.Decision, error)
}

// nativeGuard is what the native runners drive: guard.Guard, or a bare
// ledger.Ledger seen through guard's types (guardtest.Ledger).
type nativeGuard interface {
	steps[guard.Handle]
	Trust(key []byte) error
}

// runSteps runs the steps of c on g, which trusts keys by trust; without
// handles, check_handle steps go by id (the reference).
func runSteps[H any](g steps[H], handles bool, trust func(key []byte) error, c confCase) []outcome {
	var out []outcome
	for _, s := range c.Steps {
		id := string(s.ID)
		switch s.Op {
		case "check":
			out = append(out, decisionOutcome(g.Check(id, s.Token)))
		case "check_handle":
			if !handles {
				out = append(out, decisionOutcome(g.Check(id, s.Token)))
				continue
			}
			h, err := g.Handle(id)
			if err != nil {
				out = append(out, outcome{Code: codeOf(err)})
				continue
			}
			out = append(out, decisionOutcome(g.CheckHandle(h, s.Token)))
		case "seed":
			out = append(out, markOutcome(g.Seed(id, s.Token)))
		case "high_water":
			out = append(out, markOutcome(g.HighWater(id)))
		case "trust":
			out = append(out, markOutcome(0, trust(s.Key)))
		case "check_signed":
			out = append(out, decisionOutcome(g.CheckSignedBytes(id, s.Token, s.Sig)))
		}
	}
	return out
}

// runNative runs a case on the native guard; with handles, check_handle
// steps go through a Handle, else by id (the reference).
func runNative(handles bool) runner {
	return runOn(handles, func() nativeGuard { return guard.New() })
}

// runLedger runs a case on a bare ledger.Ledger, by handle.
func runLedger(t *testing.T, c confCase) []outcome {
	return runOn(true, func() nativeGuard { return &guardtest.Ledger{} })(t, c)
}

func runOn(handles bool, fresh func() nativeGuard) runner {
	return func(t *testing.T, c confCase) []outcome {
		g := fresh()
		return runSteps(g, handles, g.Trust, c)
	}
}

// runHost runs a case on this package's Guard; batch sends checks by
// handle through CheckBatch (one check per batch) instead of CheckHandle.
func runHost(shards int, batch bool) runner {
	return func(t *testing.T, c confCase) []outcome {
		ctx := context.Background()
		g, err := New(ctx, Config{Shards: shards})
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close(ctx)
		var on steps[Handle] = g
		if batch {
			on = batchChecks{g, t}
		}
		return runSteps(on, true, g.TrustKey, c)
	}
}

// batchChecks is a Guard whose checks by handle go through CheckBatch.
type batchChecks struct {
	*Guard
	t *testing.T
}

func (b batchChecks) CheckHandle(h Handle, token int64) (guard.Decision, error) {
	checks := []BatchCheck{{Handle: h, Token: token}}
	if err := b.CheckBatch(checks); err != nil {
		b.t.Fatal(err)
	}
	return checks[0].Decision, checks[0].Err
}

//go:embed testdata/conformance.js
var nodeRunner []byte

// runNode runs the whole table in node at once (one process) and returns
// its answers per case.
func runNode(t *testing.T, cases []confCase) map[string][]outcome {
	node := lookNode(t, "the node:wasi conformance run")
	dir := t.TempDir()
	files := map[string][]byte{"runner.js": nodeRunner, "guard.wasm": Bytes()}
	table, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	files["table.json"] = table
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var got map[string][]outcome
	runNodeJSON(t, &got, exec.Command(node, "runner.js", "guard.wasm", "table.json"), dir)
	return got
}

// lookNode finds node for what needs it: without it the test skips, and
// under CI fails.
func lookNode(t testing.TB, what string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node is required in CI for %s: %v", what, err)
		}
		t.Skipf("node not found, skipping %s: %v", what, err)
	}
	return node
}

// runNodeJSON runs cmd, a node script, in dir and decodes what it writes
// to standard output, JSON, into out; a failure shows its standard error.
func runNodeJSON(t testing.TB, out any, cmd *exec.Cmd, dir string) {
	t.Helper()
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd.Args[1], err, stderr.String())
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		t.Fatalf("%s output: %v\n%s", cmd.Args[1], err, stdout)
	}
}

func TestConformance(t *testing.T) {
	cases := conformanceTable()
	runners := []struct {
		name string
		run  runner
	}{
		{"native-guard", runNative(false)},
		{"native-handles", runNative(true)},
		{"native-ledger", runLedger},
		{"wazero", runHost(1, false)},
		{"wazero-4-shards", runHost(4, false)},
		{"wazero-batch", runHost(1, true)},
	}
	// Native guard.Guard is the reference: every other runner must give
	// exactly its answers (including Prev), and it must give the table's.
	ref := map[string][]outcome{}
	for _, c := range cases {
		ref[c.Name] = runNative(false)(t, c)
		for i, s := range c.Steps {
			if got := ref[c.Name][i].Code; got != s.Want {
				t.Errorf("%s: step %d %s(%q, %d): native = %d, table says %d", c.Name, i, s.Op, s.ID, s.Token, got, s.Want)
			}
		}
	}
	compare := func(t *testing.T, c confCase, got []outcome) {
		t.Helper()
		want := ref[c.Name]
		if len(got) != len(want) {
			t.Fatalf("%s: %d answers, want %d", c.Name, len(got), len(want))
		}
		for i, s := range c.Steps {
			if got[i] != want[i] {
				t.Errorf("%s: step %d %s(%q, %d) = %+v, native %+v", c.Name, i, s.Op, s.ID, s.Token, got[i], want[i])
			}
		}
	}
	for _, r := range runners[1:] {
		t.Run(r.name, func(t *testing.T) {
			for _, c := range cases {
				compare(t, c, r.run(t, c))
			}
		})
	}
	t.Run("node-wasi", func(t *testing.T) {
		got := runNode(t, cases)
		for _, c := range cases {
			compare(t, c, got[c.Name])
		}
	})
}

// The table itself must cover what the contract names.
func TestConformanceTableCoversContract(t *testing.T) {
	ops := map[string]bool{}
	codes := map[int64]bool{}
	for _, c := range conformanceTable() {
		for _, s := range c.Steps {
			ops[s.Op] = true
			if s.Want < 0 {
				codes[s.Want] = true
			}
		}
	}
	for _, op := range []string{"check", "check_handle", "seed", "high_water", "trust", "check_signed"} {
		if !ops[op] {
			t.Errorf("no step exercises %s", op)
		}
	}
	for _, c := range []int64{CodeInvalidResource, CodeInvalidToken, CodeBadSignature, CodeInvalidKey, CodeTooManyKeys} {
		if !codes[c] {
			t.Errorf("no step expects code %d", c)
		}
	}
}
