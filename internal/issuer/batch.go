package issuer

import (
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
)

// batch is one change in the making: working copies of the resources it
// touches, the events it records and the waiters it serves. Under s.mu it
// is applied to memory at once (applyLocked), so the next change builds on
// it, and queued for the committer; its answers, events and waiters are
// released only once the commit has made it durable, and a failed commit
// undoes it in memory (see RATIONALE.md).
type batch struct {
	s       *Service
	now     time.Time
	working map[string]*state // by id, once order is too long to search (lookup)
	order   []*state
	events  []fenceview.Event
	serve   []handoff
	// taken are the semaphore and multi-lock waiters this batch answers
	// (serve): they leave their queues, which live outside the working
	// copies, only when the batch is applied (applyLocked), so a change
	// refused after a hand-off leaves them waiting, not lost.
	taken []*waiter

	grants, renewals, releases, expiries int
	byKind                               [kinds]int // grants
	accepted, resets                     int
	rejected                             map[string]int
	alarms                               []fenceview.Resource
	timed                                []timedSample // waits and holds, recorded once durable (holdtimes.go)

	created map[string]bool  // resources this batch may create, for MaxResources
	presign *fenceview.Grant // the caller's grant, signed with its group by the committer (signing.go)

	prev []preimage // what applyLocked replaced, to undo a failed commit
	// The committer's verdict: err, set before done is sent. A channel
	// of an error would be two allocations per change, this one is one.
	done chan struct{}
	err  error
	// then, when set, is told answer, or the commit's error, instead of
	// done (changeThen; see tell).
	then   func(waitResult, error)
	answer waitResult

	// Room for the common batch, one resource and its one or two events
	// (an expiry and a grant), in the batch's own allocation: order,
	// prev and events start in it and move to the heap only when they
	// outgrow it. Not the working copy itself: a resource's durable
	// value points into it (commitGroup), and would keep the batch,
	// with its preimages, alive.
	inline struct {
		order  [1]*state
		prev   [1]preimage
		events [2]fenceview.Event
	}
}

type handoff struct {
	w   *waiter
	g   *fenceview.Grant
	gs  []fenceview.Grant // a multi-lock's grants
	err error             // the waiter's own refusal, instead of a grant
}

// take answers wt, a semaphore's or a multi-lock's waiter, from this
// batch: h once it is durable. Until the batch is applied, the batch's
// decisions see wt as gone from its queues (waiting).
func (b *batch) take(wt *waiter, h handoff) {
	h.w = wt
	b.serve = append(b.serve, h)
	b.taken = append(b.taken, wt)
}

// waiting reports whether wt still waits as this batch sees it.
func (b *batch) waiting(wt *waiter) bool {
	for _, x := range b.taken {
		if x == wt {
			return false
		}
	}
	return true
}

// handOffRefused is why the waiter g cannot be handed a lock whatever its
// state: an id recorded before ValidateNewID refused such ids, say. It
// gets that refusal as its answer rather than waiting for nothing.
func handOffRefused(g grantReq) error { return ValidateNewID(g.holder) }

// tell answers a changeThen caller with the commit's verdict: its
// answer once durable, or the commit's error. The batch holds the
// answer, so no closure per change is needed for it.
func (b *batch) tell(err error) {
	if err != nil {
		b.then(waitResult{}, err)
		return
	}
	b.then(b.answer.result(true))
}

// begin starts a batch. s.mu must be held until commit returns.
func (s *Service) begin() *batch {
	b := &batch{s: s, now: s.clock.Now()}
	b.order, b.prev, b.events = b.inline.order[:0], b.inline.prev[:0], b.inline.events[:0]
	return b
}

// batchMapAt is the number of working copies from which a batch looks them
// up in a map rather than its order: most batches touch one resource, and
// a map for it cost an allocation or two per change.
const batchMapAt = 8

// lookup returns the batch's working copy of id, if it has one.
func (b *batch) lookup(id string) (*state, bool) {
	if b.working != nil {
		w, ok := b.working[id]
		return w, ok
	}
	for _, w := range b.order {
		if w.res.ResourceID == id {
			return w, true
		}
	}
	return nil, false
}

// get returns the working copy of a resource, creating it if new.
func (b *batch) get(id string) *state {
	if w, ok := b.lookup(id); ok {
		return w
	}
	w := &state{res: fenceview.Resource{ResourceID: id}}
	if st, ok := b.s.resources[id]; ok {
		w.res = *st.res.Load()
		w.waiters = append([]*waiter(nil), st.waiters...)
	}
	b.order = append(b.order, w)
	if b.working != nil {
		b.working[id] = w
	} else if len(b.order) >= batchMapAt {
		b.working = make(map[string]*state, 2*len(b.order))
		for _, o := range b.order {
			b.working[o.res.ResourceID] = o
		}
	}
	return w
}

// admit checks that the batch may touch id: a known resource always, a new
// one only with an id that reads as it compares and while the service is
// under its resource limit.
func (b *batch) admit(id string) error {
	if _, ok := b.s.resources[id]; ok {
		return nil
	}
	if _, ok := b.lookup(id); ok || b.created[id] {
		return nil
	}
	if err := ValidateNewID(id); err != nil {
		return err
	}
	if len(b.s.resources)+len(b.created) >= b.s.limits.MaxResources {
		return fenceview.Errorf(fenceview.ELIMIT,
			"the server knows %d resources, its limit (--max-resources); %q would be one more. Known resources are still served",
			b.s.limits.MaxResources, id)
	}
	if b.created == nil {
		b.created = make(map[string]bool)
	}
	b.created[id] = true
	return nil
}

func (b *batch) event(e fenceview.Event) {
	if e.At.IsZero() {
		e.At = b.now
	}
	b.events = append(b.events, e)
}

// grantReq is what a grant gives: to whom, for how long, and what an
// election's grant sets.
type grantReq struct {
	kind     fenceview.Kind
	holder   string
	owner    string // the caller's key with auth on
	leaseMs  int64
	delayMs  int64 // the lock-delay should this lease run out
	election bool
	value    string    // the leader's value, for an election
	since    time.Time // a waiter's arrival, for its wait (holdtimes.go); zero: granted at once
	shared   bool      // a shared (read) hold (shared.go)
}

// grant gives the lock to g.holder with a new token, or a shared hold
// (grantShared).
func (b *batch) grant(w *state, g grantReq) (fenceview.Grant, error) {
	if g.shared {
		return b.grantShared(w, g)
	}
	token, err := nextToken(&w.res)
	if err != nil {
		return fenceview.Grant{}, err
	}
	r := &w.res
	if r.LastToken == 0 && r.HighWaterMark > 0 {
		// The first token this server issues must go above a mark that
		// tokens from elsewhere set. That is how a migration starts, and
		// also how an id claimed in advance looks: say so.
		b.alarm(w, fenceview.AlarmForeignMark, r.HighWaterMark, "", b.now)
	}
	if x := r.Expired; x != nil && x.Holder == g.holder && x.OwnerKey == g.owner {
		r.Expired = nil // its holder knows, having the lock again
	}
	if r.Holder == g.holder {
		r.HoldCount++
	} else {
		r.Holder, r.HoldCount = g.holder, 1
	}
	r.OwnerKey = g.owner
	r.LastToken, r.Token = token, token
	r.LeaseMs = g.leaseMs
	r.LockDelayMs = g.delayMs
	r.AvailableAt = time.Time{}
	r.GrantedAt = b.now
	r.ExpiresAt = b.now.Add(time.Duration(g.leaseMs) * time.Millisecond)
	e := fenceview.Event{Type: fenceview.EventGrant, ResourceID: r.ResourceID, Token: token, Holder: g.holder}
	if g.election {
		r.Election, r.Value = true, g.value
		e.Value = g.value
	}
	b.event(e)
	b.grants++
	b.byKind[g.kind]++
	b.timeGrant(w, g)
	return b.s.grantOf(r), nil
}

func (b *batch) free(w *state) {
	b.timeFree(w)
	r := &w.res
	r.Readers = nil
	r.Holder, r.OwnerKey, r.HoldCount, r.Token = "", "", 0, 0
	r.ExpiresAt, r.GrantedAt = time.Time{}, time.Time{}
	r.LockDelayMs, r.Value = 0, ""
}

// delayed reports whether w is in a lock-delay: free, and granted to
// nobody until w.res.AvailableAt.
func (b *batch) delayed(w *state) bool { return w.res.AvailableAt.After(b.now) }

// vacant reports whether w can be granted now to a newcomer: nobody holds
// it, nobody waits for it and no lock-delay runs.
func (b *batch) vacant(w *state) bool {
	return w.res.Holder == "" && len(w.waiters) == 0 && !b.delayed(w)
}

// expireIfDue records the expiry of a lease that has run out (of each
// shared hold's that has).
func (b *batch) expireIfDue(w *state) {
	if w.res.Holder != "" && !w.res.ExpiresAt.After(b.now) {
		b.expire(w, "lease-expired")
	}
}

// expire frees the lock, records why, and serves the first waiter. A
// lease that ran out (not one forced) with a lock-delay keeps the lock
// from everyone until its end plus the delay: a write its vanished holder
// sent to a resource that cannot check tokens may still land.
func (b *batch) expire(w *state, why string) {
	if sharedHeld(&w.res) {
		b.expireReaders(w, why)
		return
	}
	holder, token, delay := w.res.Holder, w.res.Token, w.res.LockDelayMs
	until := w.res.ExpiresAt.Add(time.Duration(delay) * time.Millisecond)
	// Remembered (one per lock) so its holder's late renew or release is
	// told its lease ended, and when: a lease that ran out ended at its
	// expiry, a forced one now.
	w.res.Expired = &fenceview.ExpiredLease{Holder: holder, OwnerKey: w.res.OwnerKey, At: w.res.ExpiresAt, Forced: why != "lease-expired"}
	if w.res.Expired.Forced && b.now.Before(w.res.ExpiresAt) {
		w.res.Expired.At = b.now
	}
	b.free(w)
	e := fenceview.Event{Type: fenceview.EventExpire, ResourceID: w.res.ResourceID, Token: token, Holder: holder, Reason: why}
	if why == "lease-expired" && delay > 0 {
		w.res.AvailableAt = until
		e.LockDelayMs = delay
	} else {
		w.res.AvailableAt = time.Time{}
	}
	b.event(e)
	b.expiries++
	b.handOff(w)
}

// release gives up one hold of w, freeing it and serving the next waiter
// at zero, and returns the holds left. The caller checked the holder.
func (b *batch) release(w *state) int {
	token, holder := w.res.Token, w.res.Holder
	w.res.Expired = nil // a release ends what an earlier lease's holder could be told
	w.res.HoldCount--
	left := w.res.HoldCount
	if left == 0 {
		b.free(w)
	}
	b.event(fenceview.Event{Type: fenceview.EventRelease, ResourceID: w.res.ResourceID, Token: token, Holder: holder})
	b.releases++
	if left == 0 {
		b.handOff(w)
	}
	return left
}

// handOff grants a free lock to the first waiter, so queued waiters go
// before new arrivals: the lock's own waiters, then, for a semaphore's
// slot, the semaphore's, then multi-locks that name it. Shared waiters at
// the head of the queue are granted together, and join a live read phase;
// a writer waits for every reader.
func (b *batch) handOff(w *state) {
	if b.delayed(w) || (w.res.Holder != "" && !sharedHeld(&w.res)) {
		return
	}
	for len(w.waiters) > 0 {
		next := w.waiters[0]
		if w.res.Holder != "" && !next.shared {
			return // readers hold it: the writer at the head waits for them all
		}
		w.waiters = w.waiters[1:]
		err := handOffRefused(next.grantReq)
		var g fenceview.Grant
		if err == nil {
			g, err = b.grant(w, next.grantReq)
		}
		if err != nil {
			// Its own refusal (the lock's tokens are exhausted, its id
			// is refused) is its answer: the next waiter's turn.
			b.serve = append(b.serve, handoff{w: next, err: err})
			continue
		}
		b.serve = append(b.serve, handoff{w: next, g: &g})
		if !next.shared {
			return
		}
	}
	if w.res.Holder != "" {
		return
	}
	if b.handOffPermit(w) {
		return
	}
	b.handOffMulti(w.res.ResourceID)
}

// decide records a fencing decision: the mark, the counters and the event.
// reported says it comes from a guard elsewhere (POST /v1/decisions), not
// from this server's own fence.
//
// For a resource this server issues tokens for, nothing a guard elsewhere
// says can move the mark or the counter above the last token issued: a
// claim above it is recorded and raises the counter alarm, and grants go
// on from the last token issued. Otherwise one report of a huge token
// would lock every honest writer out. proven says the presented token
// carries a valid signature of this issuer (it was really issued, say
// before a restore from an older copy): then it may raise the counter.
//
// No report can leave a resource unable to grant: on one this server never
// issued for, a report sets the mark to at most fenceview.MaxReportedMark
// (a higher claim raises the foreign-mark alarm instead). The server's own
// fence keeps the plain rule: its mark is what it accepted, and lowering
// it would let it accept a lower token afterwards. With RequireSignatures
// an unsigned report is recorded and raises nothing: no mark, no counter,
// no alarm.
func (b *batch) decide(w *state, d guard.Decision, holder, source string, at time.Time, proven, reported, read bool) {
	r := &w.res
	before := max(r.HighWaterMark, r.LastToken)
	claimed := d.Required // the mark a refusing guard holds
	if d.Reason == guard.ReasonSuperseded {
		claimed = 0 // required is the last token issued, not a mark: nothing moves
	}
	e := fenceview.Event{ResourceID: r.ResourceID, Token: d.Presented, Holder: holder, Source: source, At: at}
	if read {
		e.Access = fenceview.AccessRead
	}
	if d.Accepted {
		claimed = d.Presented
		r.Accepted++
		e.Type = fenceview.EventAccept
		b.accepted++
	} else {
		r.Rejected++
		r.LastRejectionAt = at
		e.Type = fenceview.EventReject
		e.Presented, e.Required, e.Reason = d.Presented, d.Required, d.Reason
		if b.rejected == nil {
			b.rejected = make(map[string]int)
		}
		b.rejected[d.Reason]++
	}
	b.event(e)
	if reported && b.s.signed.require && !proven {
		return
	}
	if r.LastToken == 0 {
		// Tokens from elsewhere: the plain rule. The first grant here
		// goes above the mark, with an alarm (grant).
		vouched := proven && d.Accepted // claimed is a token this issuer signed
		if reported && aboveForeignCap(r, claimed, vouched) {
			b.alarm(w, fenceview.AlarmForeignMark, claimed, source, at)
			claimed = fenceview.MaxReportedMark
		}
		r.HighWaterMark = max(r.HighWaterMark, claimed)
		return
	}
	if proven && d.Presented > r.LastToken {
		r.LastToken = d.Presented
	}
	if claimed <= r.LastToken {
		r.HighWaterMark = max(r.HighWaterMark, claimed)
	}
	if claimed > before {
		b.alarm(w, fenceview.AlarmCounterBehind, claimed, source, at)
	}
}

// alarm records that a mark above every token this server issued for the
// resource is in use somewhere, and keeps the highest such mark on the
// resource (counterAlarm) until an admin reset or recovery.
func (b *batch) alarm(w *state, reason string, mark int64, source string, at time.Time) {
	r := &w.res
	b.event(fenceview.Event{Type: fenceview.EventAlarm, ResourceID: r.ResourceID, Reason: reason,
		Token: mark, Required: r.LastToken, Source: source, At: at})
	if mark > r.CounterAlarm {
		r.CounterAlarm = mark
		b.alarms = append(b.alarms, *r) // logged once per rise, not per report
	}
}
