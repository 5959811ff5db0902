package guard_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fenceview/fenceview/guard"
)

// noKeys is a source that publishes none, as a server that does not sign.
type noKeys struct{}

func (noKeys) RefreshVerifier(_ context.Context, v *guard.Verifier) error { return v.SetKeys(nil) }

// A verifying guard built from a server that publishes no keys would
// refuse every token: building it is the error, naming the option that
// accepts unsigned tokens.
func TestVerifierFromASourceWithoutKeys(t *testing.T) {
	_, err := guard.VerifierFrom(context.Background(), noKeys{})
	if !errors.Is(err, guard.ErrNoSigningKeys) {
		t.Fatalf("no keys: %v, want ErrNoSigningKeys", err)
	}
	if _, err := guard.VerifierFrom(context.Background(), nil); !errors.Is(err, guard.ErrNoSigningKeys) {
		t.Fatalf("no source: %v", err)
	}
}
