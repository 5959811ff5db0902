package s3guard

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/fenceview/fenceview/guard"
)

// access says whether a call reads or writes the object.
type access bool

const (
	accessWrite access = false
	accessRead  access = true
)

// How a guard built from a client keeps the server's keys: fetched when it
// is built, again after keysMaxAge, and again when a signature does not
// verify (a key it has not seen yet), at most once per keysMinRefresh, so
// forged tokens cannot make it hammer the server.
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
	keys  guard.KeySource // nil: the keys are the verifier's, set by its owner
	now   func() time.Time

	mu        sync.Mutex
	fetched   time.Time // zero: never
	refreshed time.Time // the last refresh a failed verification caused
}

func newSignatures(v *guard.Verifier, keys guard.KeySource) *signatures {
	return &signatures{cache: guard.NewVerifyCache(v), keys: keys, now: time.Now}
}

// mode reports what sig proves about token on resource: an exclusive
// grant, a shared one, or nothing (guard.Unsigned). With a key source it
// fetches the keys again first when they are old, and once more when sig
// proves nothing. read says which grant's message to
// try first.
func (s *signatures) mode(ctx context.Context, resource string, token int64, sig string, read bool) (guard.Mode, error) {
	if s.keys == nil {
		return s.cache.Mode(resource, token, sig, read), nil
	}
	s.mu.Lock()
	stale := s.fetched.IsZero() || s.now().Sub(s.fetched) >= keysMaxAge
	s.mu.Unlock()
	if stale {
		if err := s.refresh(ctx); err != nil {
			return guard.Unsigned, err
		}
	}
	if m := s.cache.Mode(resource, token, sig, read); m != guard.Unsigned || sig == "" {
		return m, nil // no key verifies nothing: no reason to ask the server
	}
	s.mu.Lock()
	now := s.now()
	retry := s.refreshed.IsZero() || now.Sub(s.refreshed) >= keysMinRefresh
	if retry {
		s.refreshed = now
	}
	s.mu.Unlock()
	if !retry {
		return guard.Unsigned, nil
	}
	if err := s.refresh(ctx); err != nil {
		return guard.Unsigned, err
	}
	return s.cache.Mode(resource, token, sig, read), nil
}

func (s *signatures) refresh(ctx context.Context) error {
	if err := s.keys.RefreshVerifier(ctx, s.cache.Verifier()); err != nil {
		return fmt.Errorf("s3guard: the fenceview server's signing keys: %w", err)
	}
	s.mu.Lock()
	s.fetched = s.now()
	s.mu.Unlock()
	return nil
}

// refusal says why t may not be compared with the mark of an object
// governed by res: its resource is another (scope-mismatch); in signed
// mode, its signature proves no grant (bad-signature), or a shared
// grant's token is presented for a write (shared-token: a reader's token
// may read, never write). "" when it may.
func (g *Guard) refusal(ctx context.Context, res string, t presented, a access) (string, error) {
	if t.resource != "" && t.resource != res {
		return guard.ReasonScopeMismatch, nil
	}
	if g.sig == nil {
		return "", nil
	}
	m, err := g.sig.mode(ctx, res, t.number, t.sig, a == accessRead)
	if err != nil {
		return "", err
	}
	switch {
	case m == guard.Exclusive, m == guard.Shared && a == accessRead:
		return "", nil
	case m == guard.Shared:
		return guard.ReasonSharedToken, nil
	}
	return guard.ReasonBadSignature, nil
}

func formatToken(t int64) string { return strconv.FormatInt(t, 10) }
