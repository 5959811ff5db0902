package issuer

import (
	"context"
	"slices"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
)

// Signer signs grants: the issuer's active key's signature carrier for
// "fenceview/v1 <resourceId> <token>", followed by " shared" for a shared
// grant (*signing.Keyring: a batch of one).
type Signer interface {
	Sign(resourceID string, token int64, shared bool) (keyID, signature string, err error)
}

// BatchSigner is a Signer that signs many grants at once for less CPU
// than one at a time (*signing.Keyring: one Ed25519 signature over the
// batch's size and Merkle root, each grant carrying its inclusion proof).
// shared[i] marks a shared grant; nil, none.
type BatchSigner interface {
	Signer
	SignBatch(resourceIDs []string, tokens []int64, shared []bool) (keyID string, signatures []string, err error)
}

type signedConfig struct {
	signer  Signer
	cache   *guard.VerifyCache // nil without a verifier
	require bool
}

func newSignedConfig(cfg Config) signedConfig {
	c := signedConfig{signer: cfg.Signer, require: cfg.RequireSignatures}
	if cfg.Verifier != nil {
		c.cache = guard.NewVerifyCache(cfg.Verifier)
	}
	return c
}

// Acquire grants the lock on req.ResourceID to req.Holder for req.Lease,
// waiting up to req.Wait for it to become free. Every grant, re-entrant
// ones included, takes a new token, signed when the service has a Signer.
// A zero lease is fenceview.DefaultLease for a new holder and, for a
// re-entrant grant, the length of the current lease (as Renew keeps it).
func (s *Service) Acquire(ctx context.Context, req fenceview.AcquireRequest) (fenceview.Grant, error) {
	g, err := s.acquire(ctx, req)
	if err != nil {
		return g, err
	}
	return s.sign(g)
}

// Renew extends holder's live lease on resourceID, keeping its token. A zero
// lease renews for the lease length of the current grant. The grant is
// signed again, as a batch of one: the same token and a carrier that
// verifies for it (the grant's own, when it was granted alone).
func (s *Service) Renew(ctx context.Context, resourceID, holder string, lease time.Duration) (fenceview.Grant, error) {
	g, err := s.renew(ctx, resourceID, holder, lease)
	if err != nil {
		return g, err
	}
	return s.sign(g)
}

// signGroup starts signing the grants of a group's callers, in place, and
// returns a func that waits until it is done. commitGroup calls it before
// writing the group, so the signature is made while the commit's fsync is
// in flight, one for the whole group (a batch signature); the callers only
// read their grant once the group is answered. A failure leaves grants
// unsigned for sign to report.
func (s *Service) signGroup(group []*batch) (wait func()) {
	if s.signed.signer == nil {
		return func() {}
	}
	var grants []*fenceview.Grant
	for _, b := range group {
		if b.presign != nil {
			grants = append(grants, b.presign)
		}
	}
	if len(grants) == 0 {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if bs, ok := s.signed.signer.(BatchSigner); ok {
			ids, tokens, shared := make([]string, len(grants)), make([]int64, len(grants)), make([]bool, len(grants))
			for i, g := range grants {
				ids[i], tokens[i], shared[i] = g.ResourceID, g.Fencing.Token, g.Fencing.Shared
			}
			if keyID, sigs, err := bs.SignBatch(ids, tokens, shared); err == nil && len(sigs) == len(grants) {
				for i, g := range grants {
					g.Fencing.KeyID, g.Fencing.Signature = keyID, sigs[i]
				}
				return
			}
		}
		for _, g := range grants {
			if keyID, sig, err := s.signed.signer.Sign(g.ResourceID, g.Fencing.Token, g.Fencing.Shared); err == nil {
				g.Fencing.KeyID, g.Fencing.Signature = keyID, sig
			}
		}
	}()
	return func() { <-done }
}

// sign adds the key id and signature to a durable grant that has none yet
// (a waiter's grant, served by another caller's batch). It runs outside the
// service's lock, so signing costs the caller's goroutine, not everyone's.
func (s *Service) sign(g fenceview.Grant) (fenceview.Grant, error) {
	if s.signed.signer == nil || g.Fencing.Signature != "" {
		return g, nil
	}
	keyID, sig, err := s.signed.signer.Sign(g.ResourceID, g.Fencing.Token, g.Fencing.Shared)
	if err != nil {
		// The grant is durable and its token taken; without a signature
		// it is useless to signed guards, so say so rather than hand it out.
		s.log.Error("signing a grant", "resource", g.ResourceID, "token", g.Fencing.Token, "err", err)
		return fenceview.Grant{}, fenceview.Errorf(fenceview.EINTERNAL, "could not sign the grant")
	}
	g.Fencing.KeyID, g.Fencing.Signature = keyID, sig
	return g, nil
}

// signAll signs the grants of one change (a multi-lock's) as one batch,
// as the group commit does, outside the service's lock; without a
// BatchSigner, one by one.
func (s *Service) signAll(gs []fenceview.Grant) ([]fenceview.Grant, error) {
	if bs, ok := s.signed.signer.(BatchSigner); ok && len(gs) > 1 {
		ids, tokens, shared := make([]string, 0, len(gs)), make([]int64, 0, len(gs)), make([]bool, 0, len(gs))
		for _, g := range gs {
			if g.Fencing.Signature == "" {
				ids, tokens, shared = append(ids, g.ResourceID), append(tokens, g.Fencing.Token), append(shared, g.Fencing.Shared)
			}
		}
		if len(ids) > 1 {
			if keyID, sigs, err := bs.SignBatch(ids, tokens, shared); err == nil && len(sigs) == len(ids) {
				j := 0
				for i := range gs {
					if gs[i].Fencing.Signature == "" {
						gs[i].Fencing.KeyID, gs[i].Fencing.Signature = keyID, sigs[j]
						j++
					}
				}
			}
		}
	}
	for i := range gs {
		var err error
		if gs[i], err = s.sign(gs[i]); err != nil {
			return nil, err
		}
	}
	return gs, nil
}

// verify reports whether sig is one of this issuer's signatures of token on
// resourceID, of a grant in either mode: each proves the token issued here.
func (s *Service) verify(resourceID string, token int64, sig string) bool {
	return s.mode(resourceID, token, sig, false) != guard.Unsigned
}

// mode is what sig proves about token on resourceID: the mode of the grant
// this issuer signed it for, or guard.Unsigned. read says which mode to
// try first.
func (s *Service) mode(resourceID string, token int64, sig string, read bool) guard.Mode {
	if s.signed.cache == nil || sig == "" {
		return guard.Unsigned
	}
	return s.signed.cache.Mode(resourceID, token, sig, read)
}

// fenceVerified reports whether f may be compared (always without
// RequireSignatures, else only with a valid signature) and whether its
// signature proves a shared grant's token, which may not write.
func (s *Service) fenceVerified(f fenceview.Fence, read bool) (verified, shared bool) {
	if !s.signed.require {
		return true, false
	}
	m := s.mode(f.ResourceID, f.Token.Token, f.Token.Signature, read)
	return m != guard.Unsigned, m == guard.Shared
}

// verifyReports sets Proven on reports whose signature verifies: the proof
// that their token was issued here (see docs/guarantees.md, token safety).
// The caller's slice is left alone.
func (s *Service) verifyReports(reports []fenceview.Report) []fenceview.Report {
	out := slices.Clone(reports)
	for i := range out {
		out[i].Proven = s.verify(out[i].ResourceID, out[i].Token, out[i].Signature)
	}
	return out
}
