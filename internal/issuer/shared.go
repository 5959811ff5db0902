package issuer

import (
	"slices"
	"time"

	"github.com/fenceview/fenceview"
)

// Shared (read) holds. A lock held in shared mode keeps its holds in
// Resource.Readers, one per holder, and the read phase's token in Token;
// the resource's own holder fields mirror the first reader (summarize),
// so everything that only asks whether the lock is held sees it held.
//
// Admission is first come, first served: a shared acquire is granted at
// once when no exclusive hold is live, no lock-delay runs and nobody
// waits (a waiter ahead is an exclusive one: shared waiters at the head
// are granted as soon as they can be, handOff); otherwise it waits or is
// refused, as an exclusive acquire is. So a writer waits for the readers
// before it, and readers after it wait for the writer: nobody starves.

// readerIndex is the index of holder's (with owner's key) shared hold on
// r, or -1.
func readerIndex(r *fenceview.Resource, holder, owner string) int {
	for i := range r.Readers {
		if r.Readers[i].Holder == holder && r.Readers[i].OwnerKey == owner {
			return i
		}
	}
	return -1
}

// sharedHeld reports whether r is held in shared mode.
func sharedHeld(r *fenceview.Resource) bool { return len(r.Readers) > 0 }

// admitsReader reports whether a newcomer's shared acquire of w can be
// granted now: no exclusive hold, no lock-delay, nobody waiting ahead.
func (b *batch) admitsReader(w *state) bool {
	return (w.res.Holder == "" || sharedHeld(&w.res)) && len(w.waiters) == 0 && !b.delayed(w)
}

// acquireShared decides, under s.mu, a shared acquire of w by g (lease as
// acquireLock takes it): re-entrant, joining the read phase or beginning
// one, or waiting like any acquire.
func (b *batch) acquireShared(w *state, lease, wait time.Duration, g grantReq) outcome {
	r := &w.res
	if i := readerIndex(r, g.holder, g.owner); i >= 0 {
		if lease == 0 {
			g.leaseMs = r.Readers[i].LeaseMs // re-entrant: the current lease's length
		}
		return b.grantNow(w, g)
	}
	if r.Holder == g.holder && r.OwnerKey == g.owner && !sharedHeld(r) {
		return refusedAfter(upgradeError(r, true)) // no downgrade: it holds the lock exclusively
	}
	if lease == 0 {
		g.leaseMs = fenceview.DefaultLease.Milliseconds()
	}
	if b.admitsReader(w) {
		if err := ValidateNewID(g.holder); err != nil {
			return refused(err)
		}
		return b.grantNow(w, g)
	}
	return b.queueOn(w, b.mayWait(wait, g, busyError(r, b.now)), busyError)
}

// upgradeError refuses a holder that asks for the mode it does not hold:
// fenceview locks do not convert (a reader that waited to write would
// wait for itself).
func upgradeError(r *fenceview.Resource, shared bool) error {
	held, asked := "shared", "exclusive"
	if shared {
		held, asked = "exclusive", "shared"
	}
	return &fenceview.Error{
		Code:    fenceview.ELOCKHELD,
		Message: "lock held: this holder holds it " + held + "; release it before asking for it " + asked,
		Fields:  map[string]any{"holder": r.Holder, "expiresAt": r.ExpiresAt, "shared": !shared},
	}
}

// grantShared gives g.holder a shared hold of w: one more hold of its own
// (re-entrant: the same token), a place in the live read phase (its
// token), or a new read phase with the next token.
func (b *batch) grantShared(w *state, g grantReq) (fenceview.Grant, error) {
	r := &w.res
	readers := slices.Clone(r.Readers) // the published value shares the old array
	i := readerIndex(r, g.holder, g.owner)
	if i < 0 {
		if len(readers) == 0 {
			token, err := nextToken(r)
			if err != nil {
				return fenceview.Grant{}, err
			}
			if r.LastToken == 0 && r.HighWaterMark > 0 {
				b.alarm(w, fenceview.AlarmForeignMark, r.HighWaterMark, "", b.now)
			}
			r.LastToken, r.Token = token, token
			r.SharedPhase = token
		}
		readers = append(readers, fenceview.Hold{Holder: g.holder, OwnerKey: g.owner, GrantedAt: b.now})
		i = len(readers) - 1
	}
	if x := r.Expired; x != nil && x.Holder == g.holder && x.OwnerKey == g.owner {
		r.Expired = nil
	}
	h := &readers[i]
	h.HoldCount++
	h.LeaseMs, h.LockDelayMs = g.leaseMs, g.delayMs
	h.ExpiresAt = b.now.Add(time.Duration(g.leaseMs) * time.Millisecond)
	r.Readers = readers
	r.AvailableAt = time.Time{}
	summarize(r)
	b.event(fenceview.Event{Type: fenceview.EventGrant, ResourceID: r.ResourceID, Token: r.Token, Holder: g.holder})
	b.grants++
	b.byKind[g.kind]++
	b.timeGrant(w, g)
	return b.s.grantOfHold(r, h), nil
}

// summarize mirrors r's first reader into its holder fields, and the
// earliest expiry into ExpiresAt (when the sweep has work next); with no
// reader left, the lock is free.
func summarize(r *fenceview.Resource) {
	if len(r.Readers) == 0 {
		r.Readers = nil
		r.Holder, r.OwnerKey, r.HoldCount, r.Token = "", "", 0, 0
		r.ExpiresAt, r.GrantedAt = time.Time{}, time.Time{}
		r.LeaseMs, r.LockDelayMs = 0, 0
		return
	}
	first := &r.Readers[0]
	r.Holder, r.OwnerKey, r.HoldCount = first.Holder, first.OwnerKey, first.HoldCount
	r.GrantedAt, r.LeaseMs, r.LockDelayMs = first.GrantedAt, first.LeaseMs, first.LockDelayMs
	r.ExpiresAt = first.ExpiresAt
	for _, h := range r.Readers[1:] {
		if h.ExpiresAt.Before(r.ExpiresAt) {
			r.ExpiresAt = h.ExpiresAt
		}
	}
}

// grantOfHold is the grant of h, a shared hold of r.
func (s *Service) grantOfHold(r *fenceview.Resource, h *fenceview.Hold) fenceview.Grant {
	g := s.grantOf(r)
	g.Holder, g.HoldCount, g.ExpiresAt, g.LeaseMs = h.Holder, h.HoldCount, h.ExpiresAt, h.LeaseMs
	g.Fencing.IssuedAt = h.GrantedAt
	g.Fencing.Shared = true
	return g
}

// renewShared renews holder's shared hold of w, keeping the phase's token.
func (b *batch) renewShared(w *state, holder, owner string, lease time.Duration) outcome {
	r := &w.res
	i := readerIndex(r, holder, owner)
	if i < 0 {
		return refusedAfter(notHolderError(r, holder, owner))
	}
	readers := slices.Clone(r.Readers)
	h := &readers[i]
	if lease > 0 {
		h.LeaseMs = lease.Milliseconds()
	}
	h.ExpiresAt = b.now.Add(time.Duration(h.LeaseMs) * time.Millisecond)
	r.Readers = readers
	summarize(r)
	b.event(fenceview.Event{Type: fenceview.EventRenew, ResourceID: r.ResourceID, Token: r.Token, Holder: holder})
	b.renewals++
	g := b.s.grantOfHold(r, h)
	return outcome{commit: true, presign: true, answer: waitResult{grant: &g}}
}

// releaseShared gives up one of holder's shared holds of w and returns
// the holds it has left; when the last reader leaves, the read phase
// ends and the first waiter gets the lock.
func (b *batch) releaseShared(w *state, holder, owner string) (int, error) {
	r := &w.res
	i := readerIndex(r, holder, owner)
	if i < 0 {
		return 0, notHolderError(r, holder, owner)
	}
	token := r.Token
	r.Expired = nil
	readers := slices.Clone(r.Readers)
	readers[i].HoldCount--
	left := readers[i].HoldCount
	if left == 0 {
		b.timeHold(w, &readers[i])
		readers = slices.Delete(readers, i, i+1)
	}
	r.Readers = readers
	summarize(r)
	b.event(fenceview.Event{Type: fenceview.EventRelease, ResourceID: r.ResourceID, Token: token, Holder: holder})
	b.releases++
	b.handOff(w)
	return left, nil
}

// expireReaders ends the shared holds of w whose leases ran out (every
// one when forced), each with its expire event; one that ran out with a
// lock-delay keeps the lock from everyone until its end plus the delay.
// The last one gone, the read phase ends and the first waiter gets it.
func (b *batch) expireReaders(w *state, why string) {
	r := &w.res
	forced := why != "lease-expired"
	token := r.Token
	var kept []fenceview.Hold
	for i := range r.Readers {
		h := r.Readers[i]
		if !forced && h.ExpiresAt.After(b.now) {
			kept = append(kept, h)
			continue
		}
		b.timeHold(w, &h)
		r.Expired = &fenceview.ExpiredLease{Holder: h.Holder, OwnerKey: h.OwnerKey, At: h.ExpiresAt, Forced: forced}
		if forced && b.now.Before(h.ExpiresAt) {
			r.Expired.At = b.now
		}
		e := fenceview.Event{Type: fenceview.EventExpire, ResourceID: r.ResourceID, Token: token, Holder: h.Holder, Reason: why}
		if !forced && h.LockDelayMs > 0 {
			until := h.ExpiresAt.Add(time.Duration(h.LockDelayMs) * time.Millisecond)
			if until.After(r.AvailableAt) {
				r.AvailableAt = until
			}
			e.LockDelayMs = h.LockDelayMs
		}
		b.event(e)
		b.expiries++
	}
	if forced {
		r.AvailableAt = time.Time{}
	}
	r.Readers = kept
	summarize(r)
	b.handOff(w)
}

// timeHold notes the end of one shared hold, as timeFree does a lock's.
func (b *batch) timeHold(w *state, h *fenceview.Hold) {
	if h.GrantedAt.IsZero() {
		return
	}
	end := b.now
	if h.ExpiresAt.Before(end) {
		end = h.ExpiresAt
	}
	b.timed = append(b.timed, timedSample{id: w.res.ResourceID, d: max(end.Sub(h.GrantedAt), 0), hold: true, kind: holdKind(&w.res)})
}

// holdStates lists r's live shared holds at now, as GET /v1/locks shows
// them.
func holdStates(r *fenceview.Resource, now time.Time) []fenceview.HoldState {
	var out []fenceview.HoldState
	for _, h := range r.Readers {
		if h.ExpiresAt.After(now) {
			out = append(out, fenceview.HoldState{Holder: h.Holder, HoldCount: h.HoldCount, ExpiresAt: h.ExpiresAt, Remaining: h.ExpiresAt.Sub(now)})
		}
	}
	return out
}

// heldAt reports whether r is held at now: by a live exclusive lease, or
// by any live shared one.
func heldAt(r *fenceview.Resource, now time.Time) bool {
	if sharedHeld(r) {
		for _, h := range r.Readers {
			if h.ExpiresAt.After(now) {
				return true
			}
		}
		return false
	}
	return r.Holder != "" && r.ExpiresAt.After(now)
}

// sharedToken reports whether token is a read phase's on r (the live
// one's, kept with its holds, or the latest's, kept in memory): a shared
// grant's, which the server's own fence refuses for a write. Earlier
// phases' tokens and, after a restart, an ended phase's are not known: an
// unsigned token cannot prove its mode (see docs/guarantees.md), a signed
// one always can.
func sharedToken(r *fenceview.Resource, token int64) bool {
	return token != 0 && (token == r.SharedPhase || sharedHeld(r) && token == r.Token)
}

// holdsExclusively reports whether holder (with owner's key) holds r
// exclusively: the test of the primitives made of locks (multi-locks,
// elections), for which a shared hold of the same name is someone else's
// hold, never their own.
func holdsExclusively(r *fenceview.Resource, holder, owner string) bool {
	return !sharedHeld(r) && r.Holder == holder && r.OwnerKey == owner
}
