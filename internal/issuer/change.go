package issuer

import (
	"context"
	"time"

	"github.com/fenceview/fenceview"
)

// change makes one change: decide works under s.mu on a new batch and
// says how the change ends (an outcome: grant now, refuse, or wait), and
// change releases s.mu, once, and carries that out: it drops the batch and
// answers at once, commits it and answers once it is durable, or commits
// it and waits for the queued waiter's answer. decide never releases s.mu.
// change and changeThen are the only places a change takes s.mu and gives
// it back.
func (s *Service) change(ctx context.Context, decide func(b *batch) outcome) (waitResult, error) {
	b, o := s.decideLocked(decide)
	switch {
	case o.waiter != nil:
		return s.await(ctx, b, o.waiter) // commits b, releasing s.mu
	case !o.commit:
		s.mu.Unlock()
		return o.answer.result(true)
	}
	if err := s.finish(b); err != nil {
		return waitResult{}, err
	}
	return o.answer.result(true)
}

// decideLocked takes s.mu and decides a change on a new batch, leaving
// s.mu held. A closed service refuses every change.
func (s *Service) decideLocked(decide func(b *batch) outcome) (*batch, outcome) {
	s.mu.Lock()
	b := s.begin()
	if s.closed {
		return b, refused(errClosed)
	}
	o := decide(b)
	if o.presign && o.commit {
		b.presign = o.answer.grant // signed in place while the commit is in flight
	}
	return b, o
}

// changeThen is change for a caller that does not wait for the answer:
// then is called with it once the change is durable, on the goroutine
// that delivers the commit (in commit order; then must not block), or at
// once when the change is refused with nothing in flight. A change that
// must wait (a waiter queued, a refusal behind changes still being
// committed) is carried out as change does, on a goroutine of its own.
//
// A caller serving many requests (the RPC stream) so needs no goroutine
// parked per request and woken by the committer: on a busy server those
// two hand-offs cost more than the request's own work.
func (s *Service) changeThen(ctx context.Context, decide func(b *batch) outcome, then func(waitResult, error)) {
	b, o := s.decideLocked(decide)
	switch {
	case o.waiter != nil:
		go func() { then(s.await(ctx, b, o.waiter)) }() // await releases s.mu, held here
		return
	case !o.commit:
		s.mu.Unlock()
		then(o.answer.result(true))
		return
	}
	b.then, b.answer = then, o.answer
	if !s.applyLocked(b) {
		if s.settledLocked() {
			s.mu.Unlock()
			b.tell(nil)
			return
		}
		go func() { b.tell(s.settleLocked()) }() // settleLocked releases s.mu, held here
		return
	}
	if !s.committing {
		// No commit runs: the committer takes this one (see commitLoop;
		// the kick is never pending while committing is false).
		s.committing = true
		s.kick <- struct{}{}
	}
	s.mu.Unlock()
}

// committed commits the batch and answers nil once it is durable.
func committed() outcome { return outcome{commit: true} }

// outcome is how a change decided under s.mu ends (see change).
type outcome struct {
	answer  waitResult // the grants made now, or the refusal
	commit  bool       // commit the batch before answering; false drops it, changing nothing
	presign bool       // sign answer.grant while its commit is in flight
	waiter  *waiter    // a request that waits: its waiter, already queued (see await)
}

// refused drops the batch and answers err: nothing was changed.
func refused(err error) outcome { return outcome{answer: waitResult{err: err}} }

// refusedAfter answers err once what the batch recorded (an expiry is a
// change) is durable.
func refusedAfter(err error) outcome { return outcome{commit: true, answer: waitResult{err: err}} }

// grantNow grants w to g in b: the caller's grant, signed with its commit.
func (b *batch) grantNow(w *state, g grantReq) outcome {
	granted, err := b.grant(w, g)
	if err != nil {
		return refused(err) // tokens exhausted: b is half made
	}
	return outcome{commit: true, presign: true, answer: waitResult{grant: &granted}}
}

// queueOn queues o's waiter, if o waits, on the lock w. Giving up, it is
// answered refusal(the lock as it is then).
func (b *batch) queueOn(w *state, o outcome, refusal func(*fenceview.Resource, time.Time) error) outcome {
	wt := o.waiter
	if wt == nil {
		return o
	}
	w.waiters = append(w.waiters, wt)
	s, id := b.s, w.res.ResourceID
	wt.queuedOn = id
	wt.dequeue = func() (error, bool) {
		st := s.resources[id]
		if st == nil || !removeWaiter(&st.waiters, wt) {
			return nil, false
		}
		return refusal(st.res.Load(), s.clock.Now()), true
	}
	return o
}

// mayWait decides, under s.mu, how a request for g that cannot be granted
// now ends: refused with busy when it asked not to wait, refused when the
// server has too many waiting (both once what b recorded is durable), or
// a waiter, which the caller queues and completes (outcome).
func (b *batch) mayWait(wait time.Duration, g grantReq, busy error) outcome {
	s := b.s
	if wait == 0 {
		return refusedAfter(busy)
	}
	if s.waiting >= s.limits.MaxWaiters {
		return refusedAfter(fenceview.Errorf(fenceview.ELIMIT,
			"%d acquires are already waiting, the server's limit; retry later, or acquire with waitMs 0", s.limits.MaxWaiters))
	}
	if err := ValidateNewID(g.holder); err != nil {
		return refused(err)
	}
	return outcome{waiter: &waiter{grantReq: g, result: make(chan waitResult, 1), wait: wait}}
}

// await counts wt, which the deciding code queued under s.mu, as waiting,
// commits b and waits up to wt.wait for wt's answer. When the wait or ctx
// ends first, wt.dequeue (under s.mu) takes wt out of its queue and says
// what to answer; if it was no longer queued, it was served while giving
// up, and its answer is taken: dropping it would leave a lock held by
// nobody who knows.
func (s *Service) await(ctx context.Context, b *batch, wt *waiter) (waitResult, error) {
	wt.since = b.now // its wait, should it be granted, runs from here (holdtimes.go)
	s.waiting++
	s.waitingBy[wt.kind]++
	timer := s.clock.NewTimer(wt.wait) // the wait starts now, not when this goroutine next runs
	defer timer.Stop()
	if err := s.finish(b); err != nil {
		return waitResult{}, err
	}
	if s.queuedHook != nil {
		s.queuedHook(wt.queuedOn, wt.holder)
	}
	select {
	case r, ok := <-wt.result:
		return r.result(ok)
	case <-timer.C():
	case <-ctx.Done():
	}
	s.mu.Lock()
	err, dequeued := wt.dequeue()
	if !dequeued {
		s.mu.Unlock()
		r, ok := <-wt.result
		return r.result(ok)
	}
	s.unwait(wt)
	readersNext := s.readersAtHead(wt.queuedOn)
	// The refusal is decided on the current state, which may hold changes
	// still being committed: it is answered once they are durable, as an
	// immediate refusal is (settleLocked releases s.mu).
	if serr := s.settleLocked(); serr != nil {
		return waitResult{}, serr
	}
	if readersNext {
		// A writer that gave up at the head of a read phase's queue was
		// all that kept the readers behind it waiting: they join now.
		id := wt.queuedOn
		s.change(context.Background(), func(b *batch) outcome {
			w := b.get(id)
			b.handOff(w)
			return committed()
		})
	}
	return waitResult{}, err
}

// readersAtHead reports whether the lock id is held shared and a shared
// waiter heads its queue: one that the read phase admits at once. s.mu
// must be held.
func (s *Service) readersAtHead(id string) bool {
	st := s.resources[id]
	if id == "" || st == nil || len(st.waiters) == 0 || !st.waiters[0].shared {
		return false
	}
	r := st.res.Load()
	return sharedHeld(r) && !r.AvailableAt.After(s.clock.Now())
}

// unwait stops counting wt as waiting. s.mu must be held.
func (s *Service) unwait(wt *waiter) {
	s.waiting--
	s.waitingBy[wt.kind]--
}

// removeWaiter takes wt out of q, reporting whether it was there.
func removeWaiter(q *[]*waiter, wt *waiter) bool {
	for i, x := range *q {
		if x == wt {
			*q = append((*q)[:i:i], (*q)[i+1:]...)
			return true
		}
	}
	return false
}

// granted is r's grant, or none.
func (r waitResult) granted() fenceview.Grant {
	if r.grant == nil {
		return fenceview.Grant{}
	}
	return *r.grant
}

func (r waitResult) result(ok bool) (waitResult, error) {
	if !ok {
		return waitResult{}, errClosed
	}
	return r, r.err
}
