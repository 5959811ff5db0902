// Package signedtest is the one table of signed-token cases every guard in
// signed mode must answer alike: the native guard types, the HTTP guard, the
// SQL guard, the external-call guard and the server's own fence. Each test
// adapts its guard to a Checker and calls Run, so the guards cannot drift
// apart on what counts as a forgery.
package signedtest

import (
	"crypto/ed25519"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/merkle"
)

// Keys are fixed, so failures reproduce: Old and New are one issuer's keys
// before and after a rotation, Other is another server's.
var (
	Old   = key(1)
	New   = key(2)
	Other = key(3)
)

func key(b byte) ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = b
	}
	return ed25519.NewKeyFromSeed(seed)
}

// Public returns k's public key.
func Public(k ed25519.PrivateKey) ed25519.PublicKey { return k.Public().(ed25519.PublicKey) }

// Sign returns k's signature text of token on resource; it fails the test on
// input Sign refuses.
func Sign(t testing.TB, k ed25519.PrivateKey, resource string, token int64) string {
	t.Helper()
	s, err := guard.Sign(k, resource, token)
	if err != nil {
		t.Fatalf("Sign(%q, %d): %v", resource, token, err)
	}
	return s
}

// Checker presents token (with signature text sig; "" means none: an
// unsigned presentation) to the guard under test and returns its decision.
// Invalid input must be an error (for remote guards, a 4xx); how Required
// is reported is the guard's: Run compares it only when the checker says it
// reports it.
type Checker func(resource string, token int64, sig string) (guard.Decision, error)

// Options says what the guard under test can report.
type Options struct {
	// NoRequired: the guard does not report the mark on refusals, so Run
	// compares only Accepted and Reason.
	NoRequired bool
	// AcceptedWithoutRequired: the guard reports the mark on refusals only
	// (sqlguard.Marks, the HTTP middleware's 200).
	AcceptedWithoutRequired bool
	// StopBeforeRemoval: the guard cannot stop trusting a key (the
	// WebAssembly guard's ABI has no such call), so the table ends before
	// the removal steps.
	StopBeforeRemoval bool
}

type step struct {
	name     string
	resource string
	token    int64
	sig      string
	// want: accepted, or a refusal with reason; required is the mark.
	accepted bool
	reason   string
	required int64
	invalid  bool // input error expected
	before   func(v *guard.Verifier)
}

// Steps returns the table. The guard must start empty, in signed mode,
// trusting only Public(Old) through v (Run sets that up).
func steps(t testing.TB) []step {
	s5 := Sign(t, Old, "orders", 5)
	// The last character of a canonical 64-byte text carries 4 unused bits;
	// setting one gives a text that lax decoders map to the same bytes.
	nonCanonical := s5[:len(s5)-1] + string(flipLowBit(s5[len(s5)-1]))
	forged := strings.Repeat("A", guard.SignatureTextSize)
	short := guard.EncodeSignature(make([]byte, guard.SignatureSize-1))
	return []step{
		{name: "signed grant", resource: "orders", token: 5, sig: s5, accepted: true, required: 0},
		{name: "same grant again (cached)", resource: "orders", token: 5, sig: s5, accepted: true, required: 5},
		{name: "unsigned", resource: "orders", token: 7, sig: "", reason: guard.ReasonBadSignature, required: 5},
		{name: "token 5's signature with token 6", resource: "orders", token: 6, sig: s5, reason: guard.ReasonBadSignature, required: 5},
		{name: "forged", resource: "orders", token: 100, sig: forged, reason: guard.ReasonBadSignature, required: 5},
		{name: "truncated text", resource: "orders", token: 5, sig: s5[:len(s5)-1], reason: guard.ReasonBadSignature, required: 5},
		{name: "63 bytes", resource: "orders", token: 5, sig: short, reason: guard.ReasonBadSignature, required: 5},
		{name: "over-long", resource: "orders", token: 5, sig: s5 + "A", reason: guard.ReasonBadSignature, required: 5},
		{name: "padded", resource: "orders", token: 5, sig: s5 + "==", reason: guard.ReasonBadSignature, required: 5},
		{name: "non-canonical text of a good signature", resource: "orders", token: 5, sig: nonCanonical, reason: guard.ReasonBadSignature, required: 5},
		{name: "standard alphabet", resource: "orders", token: 5, sig: stdAlphabet(s5), reason: guard.ReasonBadSignature, required: 5},
		{name: "a space", resource: "orders", token: 5, sig: " " + s5[1:], reason: guard.ReasonBadSignature, required: 5},
		{name: "resource A's signature for B", resource: "billing", token: 5, sig: s5, reason: guard.ReasonBadSignature, required: 0},
		{name: "another server's key", resource: "orders", token: 9, sig: Sign(t, Other, "orders", 9), reason: guard.ReasonBadSignature, required: 5},
		{name: "stale but signed", resource: "orders", token: 4, sig: Sign(t, Old, "orders", 4), reason: guard.ReasonStale, required: 5},
		{name: "rotated: new key signs new grants", resource: "orders", token: 9, sig: Sign(t, New, "orders", 9), accepted: true, required: 5,
			before: func(v *guard.Verifier) { must(v.Trust(Public(New))) }},
		{name: "rotated: old grants still verify", resource: "billing", token: 3, sig: Sign(t, Old, "billing", 3), accepted: true, required: 0},
		{name: "old grant again (cached)", resource: "billing", token: 3, sig: Sign(t, Old, "billing", 3), accepted: true, required: 3},
		{name: "removed key: its cached grant no longer verifies", resource: "billing", token: 3, sig: Sign(t, Old, "billing", 3), reason: guard.ReasonBadSignature, required: 3,
			before: func(v *guard.Verifier) { v.Distrust(Public(Old)) }},
		{name: "removed key: its new grants neither", resource: "billing", token: 4, sig: Sign(t, Old, "billing", 4), reason: guard.ReasonBadSignature, required: 3},
		{name: "the new key still works", resource: "orders", token: 9, sig: Sign(t, New, "orders", 9), accepted: true, required: 9},
		{name: "empty resource", resource: "", token: 9, sig: Sign(t, New, "orders", 9), invalid: true},
		{name: "token 0", resource: "orders", token: 0, sig: Sign(t, New, "orders", 9), invalid: true},
		{name: "negative token", resource: "orders", token: -9, sig: Sign(t, New, "orders", 9), invalid: true},
		{name: "the mark never moved for a refusal", resource: "orders", token: 9, sig: Sign(t, New, "orders", 9), accepted: true, required: 9},
	}
}

// SignBatch returns k's batch carriers (guard.SignBatch) of tokens[i] on
// resources[i]; it fails the test on input SignBatch refuses.
func SignBatch(t testing.TB, k ed25519.PrivateKey, resources []string, tokens []int64) []string {
	t.Helper()
	s, err := guard.SignBatch(k, resources, tokens)
	if err != nil {
		t.Fatalf("SignBatch: %v", err)
	}
	return s
}

// SignBatchV1 returns k's batch carriers of tokens[i] on resources[i] in
// the format before the size was signed: version byte 0x01 and a
// signature over "fenceview/batch/v1 <root>". Verifiers refuse them.
func SignBatchV1(k ed25519.PrivateKey, resources []string, tokens []int64) []string {
	leaves := make([][merkle.HashSize]byte, len(tokens))
	for i := range tokens {
		leaves[i] = merkle.LeafHash(guard.Message(resources[i], tokens[i]))
	}
	tree := merkle.NewTree(leaves)
	root := tree.Root()
	sig := ed25519.Sign(k, []byte("fenceview/batch/v1 "+hex.EncodeToString(root[:])))
	out := make([]string, len(tokens))
	for i := range out {
		raw := merkle.AppendCarrier(nil, sig, uint32(i), uint32(len(tokens)), tree.AppendPath(nil, i))
		raw[0] = 0x01
		out[i] = guard.EncodeSignature(raw)
	}
	return out
}

// Tamper decodes a batch carrier's text, lets change rewrite its bytes and
// encodes the result. The layout: [0] version, [1:65] signature, [65:69]
// index, [69:73] size, [73:] the path, 32 bytes a hash.
func Tamper(text string, change func(raw []byte) []byte) string {
	raw, err := guard.DecodeCarrier(text)
	if err != nil {
		panic("signedtest: not a carrier: " + text)
	}
	return guard.EncodeSignature(change(raw))
}

// Offsets in a raw batch carrier.
const (
	offSig   = 1
	offIndex = 65
	offSize  = 69
	offPath  = 73
)

func setU32(off int, v uint32) func([]byte) []byte {
	return func(b []byte) []byte { binary.BigEndian.PutUint32(b[off:], v); return b }
}

// BatchCase is a batch carrier presented for a resource and token, and
// what a guard in signed mode must answer.
type BatchCase struct {
	Name     string
	Resource string
	Token    int64
	Sig      string
	Accepted bool
	Reason   string
	Required int64
}

// BatchCases is the table of batch carriers, played after a guard trusts
// Public(New) only, on resources no other case touches: tampered proofs of
// one grant first (each refused as bad-signature, the mark never moving;
// among them a carrier of the old format and one whose size is rewritten),
// then the grant, another of its batch (whose root is cached), a batch of
// one, tampered carriers once the root is verified, and a shared grant's
// token presented for a write (refused as shared-token).
func BatchCases(t testing.TB) []BatchCase {
	ids := []string{"batch/a", "batch/b", "batch/c", "batch/d", "batch/e"}
	sigs := SignBatch(t, New, ids, []int64{10, 11, 12, 13, 14})
	c := sigs[2] // batch/c, token 12: index 2 of 5, a path of 3 hashes
	one := SignBatch(t, New, []string{"batch/f"}, []int64{3})[0]
	// A read phase's token and an exclusive one, signed in one batch.
	mixed, err := guard.SignGrants(New, []string{"batch/g", "batch/h", "batch/g"}, []int64{20, 21, 22}, []bool{true, false, false})
	if err != nil {
		t.Fatal(err)
	}
	other := SignBatch(t, Other, ids, []int64{10, 11, 12, 13, 14})[2]
	flip := func(off int) func([]byte) []byte {
		return func(b []byte) []byte { b[off] ^= 0x01; return b }
	}
	bad := func(name, sig string) BatchCase {
		return BatchCase{Name: "batch: " + name, Resource: "batch/c", Token: 12, Sig: sig, Reason: guard.ReasonBadSignature}
	}
	return []BatchCase{
		bad("a flipped path byte", Tamper(c, flip(offPath+40))),
		bad("another index", Tamper(c, setU32(offIndex, 3))),
		bad("a path one hash short", Tamper(c, func(b []byte) []byte { return b[:len(b)-32] })),
		bad("a path one hash long", Tamper(c, func(b []byte) []byte { return append(b, b[offPath:offPath+32]...) })),
		bad("a sibling's proof", sigs[3]),
		bad("a flipped signature byte", Tamper(c, flip(offSig+7))),
		bad("size 0", Tamper(c, setU32(offSize, 0))),
		bad("index = size", Tamper(c, setU32(offIndex, 5))),
		bad("index > size", Tamper(c, setU32(offIndex, 9))),
		bad("version 3", Tamper(c, flip(0))),
		bad("version 1 (its signature did not bind the size)", SignBatchV1(New, ids, []int64{10, 11, 12, 13, 14})[2]),
		bad("the size rewritten to another its path fits", Tamper(c, setU32(offSize, 6))),
		bad("the signature alone", Tamper(c, func(b []byte) []byte { return b[offSig : offSig+64] })),
		bad("another server's batch", other),
		bad("padded", c+"=="),
		{Name: "batch: the grant", Resource: "batch/c", Token: 12, Sig: c, Accepted: true, Required: 0},
		{Name: "batch: the grant again", Resource: "batch/c", Token: 12, Sig: c, Accepted: true, Required: 12},
		{Name: "batch: another grant of the batch (its root verified)", Resource: "batch/d", Token: 13, Sig: sigs[3], Accepted: true, Required: 0},
		{Name: "batch: a flipped signature byte once the root is verified", Resource: "batch/e", Token: 14, Sig: Tamper(sigs[4], flip(offSig+7)), Reason: guard.ReasonBadSignature, Required: 0},
		{Name: "batch: its grant for another token", Resource: "batch/c", Token: 13, Sig: c, Reason: guard.ReasonBadSignature, Required: 12},
		{Name: "batch: a batch of one", Resource: "batch/f", Token: 3, Sig: one, Accepted: true, Required: 0},
		{Name: "batch: the first grant, after all of it", Resource: "batch/a", Token: 10, Sig: sigs[0], Accepted: true, Required: 0},
		{Name: "batch: the size rewritten once the root is verified", Resource: "batch/c", Token: 12, Sig: Tamper(c, setU32(offSize, 6)), Reason: guard.ReasonBadSignature, Required: 12},
		{Name: "batch: a shared token presented for a write", Resource: "batch/g", Token: 20, Sig: mixed[0], Reason: guard.ReasonSharedToken, Required: 0},
		{Name: "batch: a shared token as an exclusive one, again", Resource: "batch/g", Token: 20, Sig: mixed[0], Reason: guard.ReasonSharedToken, Required: 0},
		{Name: "batch: an exclusive grant of a mixed batch", Resource: "batch/h", Token: 21, Sig: mixed[1], Accepted: true, Required: 0},
		{Name: "batch: an exclusive grant's signature for the shared grant's token", Resource: "batch/g", Token: 20, Sig: mixed[2], Reason: guard.ReasonBadSignature, Required: 0},
		{Name: "batch: the next exclusive grant after a read phase", Resource: "batch/g", Token: 22, Sig: mixed[2], Accepted: true, Required: 0},
	}
}

// RunBatch plays BatchCases against check, a guard in signed mode that
// trusts Public(New) (for guards whose keys are not a guard.Verifier's:
// the WebAssembly and Extism modules). opts as for Run.
func RunBatch(t *testing.T, check Checker, opts Options) {
	t.Helper()
	for _, c := range BatchCases(t) {
		d, err := check(c.Resource, c.Token, c.Sig)
		opts.judge(t, c.Name, d, err, guard.Decision{Accepted: c.Accepted, Reason: c.Reason, Required: c.Required})
	}
}

// stdAlphabet rewrites s in the standard base64 alphabet; the fixed keys
// make a signature that has a '-' or '_' to rewrite.
func stdAlphabet(s string) string {
	if !strings.ContainsAny(s, "-_") {
		panic("signedtest: the fixed signature has no URL-only character")
	}
	return strings.NewReplacer("-", "+", "_", "/").Replace(s)
}

func flipLowBit(c byte) byte {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, c)
	return alphabet[i^1]
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// Run plays the table against a guard in signed mode that trusts exactly
// the keys of v (Run makes v trust Public(Old) first), then, with v
// trusting Public(New) only, the batch carriers' table (RunBatch).
func Run(t *testing.T, v *guard.Verifier, check Checker, opts Options) {
	t.Helper()
	run(t, v, check, opts)
	if opts.StopBeforeRemoval {
		return
	}
	if err := v.SetKeys([]ed25519.PublicKey{Public(New)}); err != nil {
		t.Fatal(err)
	}
	RunBatch(t, check, opts)
}

func run(t *testing.T, v *guard.Verifier, check Checker, opts Options) {
	t.Helper()
	if err := v.SetKeys([]ed25519.PublicKey{Public(Old)}); err != nil {
		t.Fatal(err)
	}
	for _, s := range steps(t) {
		if opts.StopBeforeRemoval && strings.HasPrefix(s.name, "removed key") {
			return
		}
		if s.before != nil {
			s.before(v)
		}
		d, err := check(s.resource, s.token, s.sig)
		if s.invalid {
			if err == nil {
				t.Errorf("%s: got %+v, want an input error", s.name, d)
			}
			continue
		}
		opts.judge(t, s.name, d, err, guard.Decision{Accepted: s.accepted, Reason: s.reason, Required: s.required})
	}
}

// judge fails the step name unless the guard decided as want says (its
// Accepted, Reason and, as far as opts say the guard reports it, Required).
func (opts Options) judge(t *testing.T, name string, d guard.Decision, err error, want guard.Decision) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	if d.Accepted != want.Accepted || d.Reason != want.Reason || (!opts.NoRequired && !(opts.AcceptedWithoutRequired && d.Accepted) && d.Required != want.Required) {
		t.Errorf("%s: got accepted=%v reason=%q required=%d; want accepted=%v reason=%q required=%d",
			name, d.Accepted, d.Reason, d.Required, want.Accepted, want.Reason, want.Required)
	}
}

// ErrInput is what a Checker may wrap for an input error it learned about
// from a status code rather than a Go error.
var ErrInput = errors.New("signedtest: input refused")

// ReadCase is a read or a write of the reads table.
type ReadCase struct {
	Name     string
	Read     bool
	Token    int64
	Sig      string
	Accepted bool
	Reason   string
	Required int64
}

// ReadResource is the one resource the reads table touches.
const ReadResource = "reads/doc"

// ReadCases is the table of reads and writes with shared and exclusive
// grants' tokens, on ReadResource, for a guard in signed mode that trusts
// Public(New): one rule for both (token >= mark, and the mark rises), a
// shared token never writes, and each signature stands for its own mode,
// resource and token only.
func ReadCases(t testing.TB) []ReadCase {
	sigs, err := guard.SignGrants(New, []string{ReadResource, ReadResource, ReadResource}, []int64{5, 6, 7}, []bool{true, false, true})
	if err != nil {
		t.Fatal(err)
	}
	single := guard.EncodeSignature(ed25519.Sign(New, guard.SharedMessage(ReadResource, 8)))
	return []ReadCase{
		{Name: "a write with a shared token", Token: 5, Sig: sigs[0], Reason: guard.ReasonSharedToken},
		{Name: "a read with it", Read: true, Token: 5, Sig: sigs[0], Accepted: true},
		{Name: "the write again, once verified", Token: 5, Sig: sigs[0], Reason: guard.ReasonSharedToken, Required: 5},
		{Name: "a read with a writer's token", Read: true, Token: 6, Sig: sigs[1], Accepted: true, Required: 5},
		{Name: "a read of the ended phase", Read: true, Token: 5, Sig: sigs[0], Reason: guard.ReasonStale, Required: 6},
		{Name: "the writer writes", Token: 6, Sig: sigs[1], Accepted: true, Required: 6},
		{Name: "a write with the next phase's token", Token: 7, Sig: sigs[2], Reason: guard.ReasonSharedToken, Required: 6},
		{Name: "a read with a writer's signature for the phase's token", Read: true, Token: 7, Sig: sigs[1], Reason: guard.ReasonBadSignature, Required: 6},
		{Name: "the next phase reads", Read: true, Token: 7, Sig: sigs[2], Accepted: true, Required: 6},
		{Name: "a 64-byte shared signature reads", Read: true, Token: 8, Sig: single, Accepted: true, Required: 7},
		{Name: "and never writes", Token: 8, Sig: single, Reason: guard.ReasonSharedToken, Required: 8},
		{Name: "an unsigned read", Read: true, Token: 9, Sig: "", Reason: guard.ReasonBadSignature, Required: 8},
	}
}

// RunReads plays ReadCases: read checks reads, write checks writes, of
// one guard in signed mode that trusts Public(New). opts as for Run.
func RunReads(t *testing.T, read, write Checker, opts Options) {
	t.Helper()
	for _, c := range ReadCases(t) {
		check := write
		if c.Read {
			check = read
		}
		d, err := check(ReadResource, c.Token, c.Sig)
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		if d.Accepted != c.Accepted || d.Reason != c.Reason || (!opts.NoRequired && !(opts.AcceptedWithoutRequired && d.Accepted) && d.Required != c.Required) {
			t.Errorf("%s: got accepted=%v reason=%q required=%d; want accepted=%v reason=%q required=%d",
				c.Name, d.Accepted, d.Reason, d.Required, c.Accepted, c.Reason, c.Required)
		}
	}
}
