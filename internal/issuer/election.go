package issuer

import (
	"context"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
)

// An election is a lock plus a value: its leader is the lock's holder and
// the term is the lock's token, so every guard already refuses a deposed
// leader's writes. Campaigns queue on the lock, first come first served;
// the events of the lock (grant with the value, proclaim, release,
// expire) are the election's history.

// Campaign makes req.Candidate the leader of req.Election once its lock is
// granted (waiting up to req.Wait, first come first served): the term is
// the grant's token. A campaign by the current leader keeps its term and
// sets its value (a proclaim). Another leads and the wait is over:
// ELOCKHELD "lock held", field leader.
func (s *Service) Campaign(ctx context.Context, req fenceview.CampaignRequest) (fenceview.Leader, fenceview.Grant, error) {
	name, candidate := req.Election, req.Candidate
	if err := req.Validate(); err != nil {
		return fenceview.Leader{}, fenceview.Grant{}, err
	}
	if err := ValidateNewID(candidate); err != nil {
		return fenceview.Leader{}, fenceview.Grant{}, err
	}
	lease := req.Lease
	if lease == 0 {
		lease = fenceview.DefaultLease
	}
	g := grantReq{kind: fenceview.KindElection, holder: candidate, owner: ownerOf(ctx), leaseMs: lease.Milliseconds(), election: true, value: req.Value}
	r, err := s.change(ctx, func(b *batch) outcome { return b.campaign(name, req.Wait, g) })
	if err != nil {
		return fenceview.Leader{}, fenceview.Grant{}, err
	}
	granted, err := s.sign(r.granted())
	if err != nil {
		return fenceview.Leader{}, fenceview.Grant{}, err
	}
	return fenceview.Leader{Candidate: candidate, Value: req.Value, Term: granted.Fencing.Token,
		Since: granted.Fencing.IssuedAt, ExpiresAt: granted.ExpiresAt}, granted, nil
}

// campaign decides, under s.mu, a campaign by g for the election name: the
// leader's proclaim (same term), the lock now (a new term), a refusal, or
// a waiter queued on the lock.
func (b *batch) campaign(name string, wait time.Duration, g grantReq) outcome {
	if err := b.admit(name); err != nil {
		return refused(err)
	}
	w := b.get(name)
	b.expireIfDue(w)
	if holdsExclusively(&w.res, g.holder, g.owner) {
		b.proclaim(w, g.value) // already leads: same term
		g := b.s.grantOf(&w.res)
		return outcome{commit: true, answer: waitResult{grant: &g}}
	}
	if b.vacant(w) {
		return b.grantNow(w, g)
	}
	return b.queueOn(w, b.mayWait(wait, g, leadHeldError(&w.res, b.now)), leadHeldError)
}

// proclaim sets the leader's value, recording it when it changes.
func (b *batch) proclaim(w *state, value string) {
	w.res.Election = true
	if w.res.Value == value {
		return
	}
	w.res.Value = value
	b.event(fenceview.Event{Type: fenceview.EventProclaim, ResourceID: w.res.ResourceID, Token: w.res.Token, Holder: w.res.Holder, Value: value})
}

// Proclaim changes the leader's value, same term; anyone but the leader:
// ENOTLEADER "not leader".
func (s *Service) Proclaim(ctx context.Context, election, candidate, value string) (fenceview.Leader, error) {
	if err := validateCandidate(election, candidate); err != nil {
		return fenceview.Leader{}, err
	}
	if err := fenceview.ValidateElectionValue(value); err != nil {
		return fenceview.Leader{}, err
	}
	var l fenceview.Leader
	err := s.asLeader(ctx, election, candidate, func(b *batch, w *state) {
		b.proclaim(w, value)
		l = leaderOf(&w.res)
	})
	if err != nil {
		return fenceview.Leader{}, err
	}
	return l, nil
}

// Resign ends candidate's leadership of election (every hold released);
// the next candidate waiting is elected.
func (s *Service) Resign(ctx context.Context, election, candidate string) error {
	if err := validateCandidate(election, candidate); err != nil {
		return err
	}
	return s.asLeader(ctx, election, candidate, func(b *batch, w *state) {
		w.res.HoldCount = 1
		b.release(w)
	})
}

// RenewLeadership extends the leader's lease (lease 0: the current
// length), same term.
func (s *Service) RenewLeadership(ctx context.Context, election, candidate string, lease time.Duration) (fenceview.Leader, fenceview.Grant, error) {
	if err := validateCandidate(election, candidate); err != nil {
		return fenceview.Leader{}, fenceview.Grant{}, err
	}
	if lease < 0 || lease > fenceview.MaxLease {
		return fenceview.Leader{}, fenceview.Grant{}, fenceview.Errorf(fenceview.EINVALID, "leaseMs must be between 1 and %d", fenceview.MaxLease.Milliseconds())
	}
	g, err := s.Renew(ctx, election, candidate, lease) // checks the holder and its key, as asLeader would
	if err != nil {
		if fenceview.IsRefusal(err) {
			return fenceview.Leader{}, fenceview.Grant{}, errNotLeader
		}
		return fenceview.Leader{}, fenceview.Grant{}, err
	}
	l, err := s.Leader(election)
	if err != nil || l == nil || l.Term != g.Fencing.Token {
		return fenceview.Leader{}, fenceview.Grant{}, errNotLeader // lost between the renew and the read
	}
	return *l, g, nil
}

// asLeader makes a change of election by its leader candidate: act works,
// under s.mu, on the election's lock. Anyone else is refused errNotLeader,
// once the expiries recorded on the way are durable.
func (s *Service) asLeader(ctx context.Context, election, candidate string, act func(b *batch, w *state)) error {
	owner := ownerOf(ctx)
	_, err := s.change(ctx, func(b *batch) outcome {
		if _, ok := s.resources[election]; !ok {
			return refused(errNotLeader)
		}
		w := b.get(election)
		b.expireIfDue(w)
		if !holdsExclusively(&w.res, candidate, owner) {
			return refusedAfter(errNotLeader)
		}
		act(b, w)
		return committed()
	})
	return err
}

// Leader returns the leader of election, nil when nobody leads.
func (s *Service) Leader(election string) (*fenceview.Leader, error) {
	if err := guard.ValidateResourceID(election); err != nil {
		return nil, invalid(err)
	}
	s.mu.Lock()
	st := s.resources[election]
	s.mu.Unlock()
	if st == nil || st.read() == nil {
		return nil, nil
	}
	r := st.read()
	if r.Holder == "" || !r.ExpiresAt.After(s.clock.Now()) {
		return nil, nil
	}
	l := leaderOf(r)
	return &l, nil
}

func leaderOf(r *fenceview.Resource) fenceview.Leader {
	return fenceview.Leader{Candidate: r.Holder, Value: r.Value, Term: r.Token, Since: r.GrantedAt, ExpiresAt: r.ExpiresAt}
}

var errNotLeader = fenceview.Errorf(fenceview.ENOTLEADER, "not leader")

// leadHeldError is a campaign's refusal: who leads, or the lock-delay.
func leadHeldError(r *fenceview.Resource, now time.Time) error {
	if r.Holder == "" {
		return busyError(r, now)
	}
	l := leaderOf(r)
	return &fenceview.Error{Code: fenceview.ELOCKHELD, Message: "lock held", Fields: map[string]any{"leader": map[string]any{
		"candidate": l.Candidate, "value": l.Value, "term": l.Term, "since": l.Since, "expiresAt": l.ExpiresAt}}}
}

// validateCandidate checks the election and candidate of a leader's call.
func validateCandidate(election, candidate string) error {
	return fenceview.CampaignRequest{Election: election, Candidate: candidate}.Validate()
}
