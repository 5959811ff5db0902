package callguard_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/callguard"
	"github.com/fenceview/fenceview/internal/signedtest"
)

// The signed table through CallSigned: the call runs exactly for accepted
// tokens, with their idempotency key; a forgery never reaches it.
func TestCallSignedTable(t *testing.T) {
	v := &guard.Verifier{}
	rec := guard.NewSigned(v)
	signedtest.Run(t, v, func(r string, tok int64, sig string) (guard.Decision, error) {
		var key string
		d, err := callguard.CallSigned(context.Background(), rec, r, tok, sig, func(ctx context.Context, k string) error {
			key = k
			return nil
		})
		var refused *guard.RefusalError
		switch {
		case errors.As(err, &refused):
			if key != "" {
				t.Fatalf("refused token %d reached the call", tok)
			}
			return d, nil
		case err != nil:
			return d, err
		}
		if key != guard.IdempotencyKey(r, tok) {
			t.Fatalf("accepted token %d: call ran with key %q", tok, key)
		}
		return d, nil
	}, signedtest.Options{})
}

// Call (unsigned) against a recorder in signed mode never runs the call.
func TestCallUnsignedAgainstSignedRecorder(t *testing.T) {
	v, _ := guard.NewVerifier(signedtest.Public(signedtest.Old))
	ran := false
	d, err := callguard.Call(context.Background(), guard.NewSigned(v), "r", 5, func(context.Context, string) error { ran = true; return nil })
	if ran || d.Reason != guard.ReasonBadSignature || err == nil {
		t.Fatalf("ran=%v d=%+v err=%v", ran, d, err)
	}
}
