package wasm

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/fenceview/fenceview/guard"
)

// The text form of a signature: the canonical base64url text verifies;
// padding, the standard alphabet, line breaks and other lengths are bad
// signatures, as in the Go guard. Every instance trusts the key.
func TestCheckSignedText(t *testing.T) {
	g := newGuard(t, Config{Shards: 4})
	native := guard.New()
	for _, k := range [][]byte{pub(keyA)} {
		if err := g.TrustKey(k); err != nil {
			t.Fatal(err)
		}
		if err := native.Trust(k); err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} { // spread over the instances
		good := base64.RawURLEncoding.EncodeToString(sign(keyA, id, 5))
		for _, sig := range []string{
			good + "==", base64.StdEncoding.EncodeToString(sign(keyA, id, 5)), good[:40] + "\n" + good[40:],
			good[:85], good + "A", "", strings.Repeat("A", 86), base64.RawURLEncoding.EncodeToString(sign(keyB, id, 5)),
		} {
			d, err := g.CheckSigned(id, 5, sig)
			nd, nerr := native.CheckSigned(id, 5, sig)
			if err != nil || nerr != nil || d != nd || d.Accepted || d.Reason != guard.ReasonBadSignature {
				t.Errorf("%s: signature %q: wasm %+v %v, native %+v %v", id, sig, d, err, nd, nerr)
			}
		}
		d, err := g.CheckSigned(id, 5, good)
		nd, _ := native.CheckSigned(id, 5, good)
		if err != nil || !d.Accepted || d != nd {
			t.Errorf("%s (%d): the canonical text: %+v %v, native %+v", id, i, d, err, nd)
		}
		// A bare token is refused once a key is trusted, on every instance.
		if d, err := g.Check(id, 6); err != nil || d.Accepted || d.Reason != guard.ReasonBadSignature || d.Required != 5 {
			t.Errorf("%s: unsigned check: %+v %v", id, d, err)
		}
	}
	if err := g.TrustKey(make([]byte, 31)); err != ErrInvalidPublicKey {
		t.Errorf("a 31-byte key: %v", err)
	}
}
