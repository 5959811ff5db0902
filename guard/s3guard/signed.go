package s3guard

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/guard"
)

// access says whether a call reads or writes the object.
type access bool

const (
	accessWrite access = false
	accessRead  access = true
)

// How a guard built from a client keeps the server's keys: fetched at the
// first signed check, again after keysMaxAge, and again when a signature
// does not verify (a key it has not seen yet), at most once per
// keysMinRefresh, so forged tokens cannot make it hammer the server.
const (
	keysMaxAge     = time.Minute
	keysMinRefresh = time.Second
	// abortTimeout bounds the cleanup of an upload that did not complete.
	abortTimeout = 10 * time.Second
)

// signatures is a guard's signed mode: the keys it trusts, its memory of
// verifications, and where the keys come from.
type signatures struct {
	cache *guard.VerifyCache
	fv    *client.Client // nil: the keys are the verifier's, set by its owner
	now   func() time.Time

	mu        sync.Mutex
	fetched   time.Time // zero: never
	refreshed time.Time // the last refresh a failed verification caused
}

func newSignatures(v *guard.Verifier, fv *client.Client) *signatures {
	return &signatures{cache: guard.NewVerifyCache(v), fv: fv, now: time.Now}
}

// verify reports whether sig is a trusted key's signature of token on
// resource. With a client it fetches the server's keys first when it has
// none or they are old, and once more when sig does not verify.
func (s *signatures) verify(ctx context.Context, resource string, token int64, sig string) (bool, error) {
	if s.fv == nil {
		return s.cache.Verify(resource, token, sig), nil
	}
	s.mu.Lock()
	stale := s.fetched.IsZero() || s.now().Sub(s.fetched) >= keysMaxAge
	s.mu.Unlock()
	if stale {
		if err := s.refresh(ctx); err != nil {
			return false, err
		}
	}
	if s.cache.Verify(resource, token, sig) {
		return true, nil
	}
	if sig == "" {
		return false, nil // no key verifies nothing: no reason to ask the server
	}
	s.mu.Lock()
	now := s.now()
	retry := s.refreshed.IsZero() || now.Sub(s.refreshed) >= keysMinRefresh
	if retry {
		s.refreshed = now
	}
	s.mu.Unlock()
	if !retry {
		return false, nil
	}
	if err := s.refresh(ctx); err != nil {
		return false, err
	}
	return s.cache.Verify(resource, token, sig), nil
}

func (s *signatures) refresh(ctx context.Context) error {
	if err := s.fv.RefreshVerifier(ctx, s.cache.Verifier()); err != nil {
		return fmt.Errorf("s3guard: the fenceview server's signing keys: %w", err)
	}
	s.mu.Lock()
	s.fetched = s.now()
	s.mu.Unlock()
	return nil
}

// refusal says why t may not be compared with the mark of an object
// governed by res: its resource is another (scope-mismatch), or in signed
// mode its signature does not verify (bad-signature). "" when it may.
func (g *Guard) refusal(ctx context.Context, res string, t client.Token, _ access) (string, error) {
	if t.Resource != "" && t.Resource != res {
		return guard.ReasonScopeMismatch, nil
	}
	if g.sig == nil {
		return "", nil
	}
	// Reads and writes both take an exclusive grant's signature; a shared
	// grant's (a reader's) takes the shared-lock message, which only reads
	// will accept.
	ok, err := g.sig.verify(ctx, res, t.Number, t.Signature)
	if err != nil {
		return "", err
	}
	if !ok {
		return guard.ReasonBadSignature, nil
	}
	return "", nil
}

func formatToken(t int64) string { return strconv.FormatInt(t, 10) }
