package issuer

import (
	"context"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
)

// The operations below are Acquire, Renew, Release and Fence for a caller
// that serves many requests and waits for none (the RPC stream): each
// calls then with what its twin returns, once the change is durable, on
// the goroutine that delivers the commit. then must not block. See
// changeThen.

// AcquireThen is Acquire answered through then.
func (s *Service) AcquireThen(ctx context.Context, req fenceview.AcquireRequest, then func(fenceview.Grant, error)) {
	decide, err := acquireDecision(ctx, req)
	if err != nil {
		then(fenceview.Grant{}, err)
		return
	}
	s.changeThen(ctx, decide, s.thenSigned(then))
}

// RenewThen is Renew answered through then.
func (s *Service) RenewThen(ctx context.Context, resourceID, holder string, lease time.Duration, then func(fenceview.Grant, error)) {
	decide, err := renewDecision(ctx, resourceID, holder, lease)
	if err != nil {
		then(fenceview.Grant{}, err)
		return
	}
	s.changeThen(ctx, decide, s.thenSigned(then))
}

// thenSigned answers a grant as Acquire and Renew do: signed.
func (s *Service) thenSigned(then func(fenceview.Grant, error)) func(waitResult, error) {
	return func(r waitResult, err error) {
		if err != nil {
			then(fenceview.Grant{}, err)
			return
		}
		then(s.sign(r.granted()))
	}
}

// ReleaseThen is Release answered through then.
func (s *Service) ReleaseThen(ctx context.Context, resourceID, holder string, then func(int, error)) {
	rel, err := releaseDecision(ctx, resourceID, holder)
	if err != nil {
		then(0, err)
		return
	}
	s.changeThen(ctx, rel.decide, func(_ waitResult, err error) {
		if err != nil {
			then(0, err)
			return
		}
		then(rel.left, nil)
	})
}

// FenceThen is Fence answered through then.
func (s *Service) FenceThen(ctx context.Context, f fenceview.Fence, then func(guard.Decision, error)) {
	fc, err := s.fenceDecisionOf(f)
	if err != nil {
		then(guard.Decision{}, err)
		return
	}
	s.changeThen(ctx, fc.decide, func(_ waitResult, err error) {
		if err != nil {
			then(guard.Decision{}, err)
			return
		}
		then(fc.d, nil)
	})
}
