package wasm

import (
	"encoding/binary"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/signedtest"
)

// Batch carriers through guard.wasm on wazero, by text and by raw bytes:
// the same decisions as the signed table wants (tampered proofs refused as
// bad-signature, marks untouched), on every instance.
func TestBatchCarriersInTheModule(t *testing.T) {
	for _, entry := range []string{"text", "raw"} {
		t.Run(entry, func(t *testing.T) {
			g := newGuard(t, Config{Shards: 3})
			if err := g.TrustKey(signedtest.Public(signedtest.New)); err != nil {
				t.Fatal(err)
			}
			native := guard.New()
			if err := native.Trust(signedtest.Public(signedtest.New)); err != nil {
				t.Fatal(err)
			}
			signedtest.RunBatch(t, func(r string, tok int64, sig string) (guard.Decision, error) {
				var d guard.Decision
				var err error
				if entry == "text" {
					d, err = g.CheckSigned(r, tok, sig)
				} else {
					raw, derr := guard.DecodeCarrier(sig)
					if derr != nil {
						raw = []byte(sig) // stands for malformed bytes
					}
					d, err = g.CheckSignedBytes(r, tok, raw)
				}
				if nd, nerr := native.CheckSigned(r, tok, sig); err == nil && (nerr != nil || nd != d) {
					t.Errorf("%s %d: wasm %+v, native %+v %v", r, tok, d, nd, nerr)
				}
				return d, err
			}, signedtest.Options{})
			marks := map[string]int64{"batch/a": 10, "batch/b": 0, "batch/c": 12, "batch/d": 13, "batch/e": 0, "batch/f": 3}
			for r, want := range marks {
				if got, err := g.HighWater(r); err != nil || got != want {
					t.Errorf("%s: mark %d, %v; want %d", r, got, err, want)
				}
			}
		})
	}
}

// The same through guard-extism.wasm in the Extism Go SDK.
func TestBatchCarriersInTheExtismModule(t *testing.T) {
	p := newExtismPlugin(t)
	key := guard.EncodePublicKey(signedtest.Public(signedtest.New))
	if _, out, err := p.Call("trust_key", []byte(`{"publicKey":"`+key+`"}`)); err != nil || string(out) != "{}" {
		t.Fatalf("trust_key: %q %v", out, err)
	}
	signedtest.RunBatch(t, func(r string, tok int64, sig string) (guard.Decision, error) {
		in, _ := json.Marshal(map[string]any{"resourceId": r, "token": tok, "signature": sig})
		_, out, err := p.Call("check_signed", in)
		if err != nil {
			return guard.Decision{}, err
		}
		var a struct {
			Accepted bool   `json:"accepted"`
			Reason   string `json:"reason"`
			Required int64  `json:"required"`
		}
		if err := json.Unmarshal(out, &a); err != nil {
			t.Fatalf("check_signed answered %q", out)
		}
		return guard.Decision{Accepted: a.Accepted, Reason: a.Reason, Presented: tok, Required: a.Required}, nil
	}, signedtest.Options{AcceptedWithoutRequired: true})
	for r, want := range map[string]int64{"batch/a": 10, "batch/b": 0, "batch/c": 12, "batch/e": 0} {
		_, out, err := p.Call("high_water", []byte(`{"resourceId":"`+r+`"}`))
		if err != nil || string(out) != `{"highWaterMark":`+strconv.FormatInt(want, 10)+`}` {
			t.Errorf("%s: %q %v; want mark %d", r, out, err, want)
		}
	}
}

// Shared grants' tokens in both modules, as in the native guard: a read
// takes them (and exclusive ones), a write refuses them as shared-token
// without moving the mark, and a later writer fences out the read phase.
func TestSharedTokensInTheModules(t *testing.T) {
	sigs, err := guard.SignGrants(signedtest.New, []string{"doc", "doc", "doc"}, []int64{5, 6, 7}, []bool{true, false, true})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		token  int64
		sig    string
		read   bool
		reason string
	}{
		{5, sigs[0], false, guard.ReasonSharedToken},
		{5, sigs[0], true, ""},
		{6, sigs[1], true, ""}, // a writer's token reads too
		{5, sigs[0], true, guard.ReasonStale},
		{6, sigs[1], false, ""},
		{7, sigs[2], false, guard.ReasonSharedToken},
		{7, sigs[1], true, guard.ReasonBadSignature},
		{7, sigs[2], true, ""},
	}
	g := newGuard(t, Config{Shards: 1})
	if err := g.TrustKey(signedtest.Public(signedtest.New)); err != nil {
		t.Fatal(err)
	}
	native := guard.NewSigned(nil)
	if err := native.Trust(signedtest.Public(signedtest.New)); err != nil {
		t.Fatal(err)
	}
	p := newExtismPlugin(t)
	key := guard.EncodePublicKey(signedtest.Public(signedtest.New))
	if _, _, err := p.Call("trust_key", []byte(`{"publicKey":"`+key+`"}`)); err != nil {
		t.Fatal(err)
	}
	for i, s := range steps {
		check, checkNative, access := g.CheckSigned, native.CheckSigned, "write"
		if s.read {
			check, checkNative, access = g.CheckSignedRead, native.CheckSignedRead, "read"
		}
		d, err := check("doc", s.token, s.sig)
		nd, nerr := checkNative("doc", s.token, s.sig)
		if err != nil || nerr != nil || d != nd || d.Accepted != (s.reason == "") || d.Reason != s.reason {
			t.Fatalf("%d: wasm %+v %v, native %+v %v; want reason %q", i, d, err, nd, nerr, s.reason)
		}
		in, _ := json.Marshal(map[string]any{"resourceId": "doc", "token": s.token, "signature": s.sig, "access": access})
		_, out, err := p.Call("check_signed", in)
		var a struct {
			Accepted bool   `json:"accepted"`
			Reason   string `json:"reason"`
		}
		if err != nil || json.Unmarshal(out, &a) != nil || a.Accepted != d.Accepted || a.Reason != d.Reason {
			t.Fatalf("%d: extism %q %v, want %+v", i, out, err, d)
		}
	}
	if hwm, _ := g.HighWater("doc"); hwm != 7 {
		t.Fatalf("mark %d, want 7", hwm)
	}
	// An access that is neither is invalid input, in both entry points.
	for _, fn := range []string{"check", "check_signed"} {
		if _, out, err := p.Call(fn, []byte(`{"resourceId":"doc","token":9,"access":"READ"}`)); err == nil {
			t.Errorf("%s with access READ: %q", fn, out)
		}
	}
}

// Every index of every batch size 1..70, its leaves shared and exclusive
// in turn, through guard.wasm: each grant reads, an exclusive one writes,
// a shared one is refused for a write, and its carrier with the size
// rewritten (to one its path fits) or as version 1 is refused.
func TestEveryBatchCarrierInTheModule(t *testing.T) {
	g := newGuard(t, Config{Shards: 1})
	if err := g.TrustKey(signedtest.Public(signedtest.New)); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 70; n++ {
		ids, tokens, shared := make([]string, n), make([]int64, n), make([]bool, n)
		for i := range ids {
			ids[i], tokens[i], shared[i] = "b"+strconv.Itoa(n)+"/"+strconv.Itoa(i), int64(100+i), (i+n)%3 == 0
		}
		sigs, err := guard.SignGrants(signedtest.New, ids, tokens, shared)
		if err != nil {
			t.Fatal(err)
		}
		for i, sig := range sigs {
			raw, _ := guard.DecodeCarrier(sig)
			for _, bad := range [][]byte{rewriteSize(raw, n+1), append([]byte{1}, raw[1:]...)} {
				if d, err := g.CheckSignedBytesRead(ids[i], tokens[i], bad); err != nil || d.Reason != guard.ReasonBadSignature {
					t.Fatalf("n=%d i=%d: a tampered carrier: %+v %v", n, i, d, err)
				}
			}
			d, err := g.CheckSigned(ids[i], tokens[i], sig)
			if err != nil || d.Accepted == shared[i] || shared[i] && d.Reason != guard.ReasonSharedToken {
				t.Fatalf("n=%d i=%d shared=%v: a write: %+v %v", n, i, shared[i], d, err)
			}
			if d, err := g.CheckSignedRead(ids[i], tokens[i], sig); err != nil || !d.Accepted {
				t.Fatalf("n=%d i=%d: a read: %+v %v", n, i, d, err)
			}
		}
	}
}

// rewriteSize is raw, a batch carrier, with its size set to size.
func rewriteSize(raw []byte, size int) []byte {
	out := append([]byte(nil), raw...)
	binary.BigEndian.PutUint32(out[69:], uint32(size))
	return out
}
