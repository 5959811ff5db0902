package issuer

import (
	"context"
	"sync"
	"time"

	"github.com/fenceview/fenceview"
)

// finish applies b in memory, releases s.mu and waits until b is durable.
// s.mu must be held.
//
// When no commit is running, the caller commits b itself rather than wake
// the committer and sleep until it answers: on a quiet server that is two
// goroutine hand-offs fewer per change, a good part of a one-client
// request's time outside the fsync. When a commit is running, b waits for
// the next group, committed by the committer; if any did, the caller hands them to the
// committer once its own commit is done, so no caller commits for others.
func (s *Service) finish(b *batch) error {
	if !s.applyLocked(b) {
		return s.settleLocked()
	}
	if s.committing {
		s.mu.Unlock()
		<-b.done
		return b.err
	}
	s.committing = true
	s.callers.Add(1)
	defer s.callers.Done()
	group := s.queue
	s.queue = nil
	s.mu.Unlock()
	d := s.commitGroup(group)
	s.mu.Lock()
	if len(s.queue) > 0 {
		s.kick <- struct{}{} // the committer owns the next groups; never full (see commitLoop)
	} else {
		s.committing = false
	}
	s.mu.Unlock()
	d.deliver() // while the next commit runs
	<-b.done
	return b.err
}

// settleLocked answers a change that recorded nothing (a refusal: the
// lock is held) once the changes it was decided on are durable, and
// releases s.mu. Readers read only durable state (known.durable), so a
// refusal answered from a grant still being committed could otherwise
// be followed by a read showing the lock free: the answer waits for that
// grant's commit, about one fsync, and if the commit fails the answer is
// errUnavailable, since what it said may have been undone.
func (s *Service) settleLocked() error {
	need := s.seq
	if s.settledLocked() {
		s.mu.Unlock()
		return nil
	}
	if s.settlingHook != nil {
		s.settlingHook()
	}
	for s.published < need && s.lost < need {
		s.settled.Wait()
	}
	lost := s.lost >= need
	s.mu.Unlock()
	if lost {
		return errUnavailable
	}
	return nil
}

// settledLocked reports whether every change decided so far is durable,
// or undone: nothing is in flight. s.mu must be held.
func (s *Service) settledLocked() bool { return s.seq <= max(s.published, s.lost) }

// applyLocked makes b the current state and queues it for the committer.
// It reports whether there is anything to wait for: a batch without events
// (a waiter joining a queue) changes nothing durable.
func (s *Service) applyLocked(b *batch) bool {
	for _, w := range b.order {
		st, ok := s.resources[w.res.ResourceID]
		if !ok {
			if len(b.events) == 0 {
				continue // looked at, never changed: don't remember it
			}
			st = &known{id: w.res.ResourceID}
			s.resources[st.id] = st
			s.index.ReplaceOrInsert(st)
		}
		old := st.res.Load() // nil for a new resource
		b.prev = append(b.prev, preimage{id: st.id, res: old})
		s.setAlarmed(st, old != nil && old.CounterAlarm > 0, w.res.CounterAlarm > 0)
		r := w.res // a new value: readers may hold the old one
		st.res.Store(&r)
		st.waiters = w.waiters
		s.track(st, &r)
	}
	for _, wt := range b.taken { // answered by b: out of their queues
		if wt.ids != nil {
			s.dropMulti(wt)
		} else {
			q := s.permitQ[wt.sem]
			removeWaiter(&q, wt)
			s.setPermitQ(wt.sem, q)
		}
	}
	if len(b.events) == 0 {
		// Nothing durable, so nothing granted: the waiters it answers
		// are told their own refusals now.
		for _, h := range b.serve {
			h.w.result <- waitResult{err: h.err}
			s.unwait(h.w)
		}
		return false
	}
	for i := range b.events {
		s.seq++
		b.events[i].Seq = s.seq
	}
	if b.then == nil {
		b.done = make(chan struct{}, 1)
	}
	s.queue = append(s.queue, b)
	return true
}

// commitLoop is the group committer: whatever is queued when it takes a
// group goes into one transaction, so concurrent changes share one fsync.
// A caller that committed its own change (finish) hands it the changes
// queued meanwhile with a kick; it keeps committing while there are any,
// then gives the commit back to the next caller (committing = false). So
// at most one kick is ever pending: a caller kicks only while it owns the
// commit, and it owns it only after the loop gave it up.
func (s *Service) commitLoop() {
	defer close(s.commitDone)
	for {
		stopping := false
		select {
		case <-s.kick:
		case <-s.stopCommit:
			stopping = true
		}
		for {
			s.mu.Lock()
			group := s.queue
			s.queue = nil
			if len(group) == 0 {
				if !stopping {
					s.committing = false
				}
				s.mu.Unlock()
				break
			}
			s.mu.Unlock()
			d := s.commitGroup(group)
			if len(d.targets) == 0 {
				d.deliver() // answers only
				continue
			}
			// Delivered beside the next group's commit, as a caller
			// that commits its own change does (finish).
			s.delivering.Add(1)
			go func() {
				defer s.delivering.Done()
				d.deliver()
			}()
		}
		if stopping {
			return
		}
	}
}

// commitBuf holds what one commit writes, reused from commit to commit:
// the rows and events of a busy server's group cost some kilobytes each
// time. Stores do not keep them after Apply (they copy what they queue).
type commitBuf struct {
	rows   []*fenceview.Resource
	events []fenceview.Event
	latest map[string]int // rows' index by resource id, in groups of several batches
}

var commitBufs = sync.Pool{New: func() any { return &commitBuf{latest: map[string]int{}} }}

// put returns buf to the pool, holding no change's strings or rows.
func (buf *commitBuf) put() {
	clear(buf.rows)
	clear(buf.events)
	clear(buf.latest)
	buf.rows, buf.events = buf.rows[:0], buf.events[:0]
	if cap(buf.events) > 4096 { // a burst's buffers are not kept
		return
	}
	commitBufs.Put(buf)
}

// delivery is what a commit leaves to do once the next one may start:
// hand its events to subscribers, then answer its callers.
type delivery struct {
	hub     *hub
	targets []*Subscription
	answer  []*batch
	err     error
}

func (d delivery) deliver() {
	d.hub.deliver(d.targets)
	for _, b := range d.answer {
		if b.then != nil {
			b.tell(d.err)
			continue
		}
		b.err = d.err
		b.done <- struct{}{}
	}
}

// commitGroup writes group durably and publishes it in memory, under s.mu:
// what readers see, the waiters it served, the last sequence number
// published. Its delivery (subscribers, then callers) is planned here, in
// commit order, and done by the caller outside s.mu.
func (s *Service) commitGroup(group []*batch) delivery {
	buf := commitBufs.Get().(*commitBuf)
	defer buf.put()
	rows, events := buf.rows, buf.events
	for _, b := range group {
		for _, w := range b.order {
			if len(group) == 1 {
				rows = append(rows, &w.res) // a batch's copies are of distinct resources
				continue
			}
			// A later batch's copy of a resource supersedes an earlier one.
			if i, ok := buf.latest[w.res.ResourceID]; ok {
				rows[i] = &w.res
			} else {
				buf.latest[w.res.ResourceID] = len(rows)
				rows = append(rows, &w.res)
			}
		}
		events = append(events, b.events...)
	}
	buf.rows, buf.events = rows, events
	signed := s.signGroup(group)
	start := time.Now() // wall time, not s.clock: a cost measured, not a lease
	err := s.store.Apply(context.Background(), rows, events)
	signed() // before any caller is answered and reads its grant
	if s.obs != nil {
		s.obs.ObserveCommit(time.Since(start), len(events), err)
	}

	s.mu.Lock()
	if err != nil {
		s.log.Error("commit failed; changes in flight refused and undone", "err", err, "events", len(events))
		failed := append(group, s.queue...) // later batches built on the failed ones
		s.queue = nil
		s.rollbackLocked(failed)
		s.lost = s.seq // every change in flight is undone
		s.settled.Broadcast()
		s.mu.Unlock()
		return delivery{hub: &s.hub, answer: failed, err: errUnavailable}
	}
	for _, r := range rows {
		// The latest copy of each resource in the group, never changed
		// again (its batch is done): what readers see from now on.
		s.resources[r.ResourceID].durable.Store(r)
	}
	for _, b := range group {
		for _, h := range b.serve {
			h.w.result <- waitResult{grant: h.g, grants: h.gs, err: h.err}
			s.unwait(h.w)
		}
		s.metrics.add(b)
		for _, r := range b.alarms {
			s.log.Warn("ALARM: token counter behind a recorded high-water mark; grants continue above the mark, reset the counter deliberately",
				"resource", r.ResourceID, "mark", r.HighWaterMark, "lastToken", r.LastToken)
		}
		s.published = b.events[len(b.events)-1].Seq
	}
	s.settled.Broadcast()
	s.mu.Unlock()
	return delivery{hub: &s.hub, targets: s.hub.plan(events), answer: group}
}

// track keeps the sweep's sets in step with st's new value r. s.mu must
// be held.
func (s *Service) track(st *known, r *fenceview.Resource) {
	if r.Holder != "" {
		s.held[st.id] = st
	} else {
		delete(s.held, st.id)
	}
	if !r.AvailableAt.IsZero() {
		s.delayed[st.id] = st
	} else {
		delete(s.delayed, st.id)
	}
}

// setAlarmed keeps the alarmed set in step with a change of st's alarm.
// s.mu must be held.
func (s *Service) setAlarmed(st *known, was, is bool) {
	switch {
	case is && !was:
		s.alarmed[st.id] = st
		s.alarmIndex.ReplaceOrInsert(st)
	case was && !is:
		delete(s.alarmed, st.id)
		s.alarmIndex.Delete(st)
	}
}

// preimage is a resource as it was before a batch changed it: res is nil
// when the batch created it.
type preimage struct {
	id  string
	res *fenceview.Resource
}

// rollbackLocked undoes failed batches in memory, newest first. Waiters on
// the resources they touched are answered (a queue may have formed behind a
// grant that never happened), and so are waiters the batches handed a lock.
// Token counters keep their in-memory values: a failed commit may still
// have reached the disk, and its tokens must never be issued again.
func (s *Service) rollbackLocked(failed []*batch) {
	for i := len(failed) - 1; i >= 0; i-- {
		b := failed[i]
		for _, h := range b.serve {
			h.w.result <- waitResult{err: errUnavailable}
			s.unwait(h.w)
		}
		for j := len(b.prev) - 1; j >= 0; j-- {
			p := b.prev[j]
			st := s.resources[p.id]
			for _, w := range st.waiters {
				w.result <- waitResult{err: errUnavailable}
				s.unwait(w)
			}
			st.waiters = nil
			failed := st.res.Load()
			r := fenceview.Resource{ResourceID: p.id}
			if p.res != nil {
				r = *p.res
			}
			r.LastToken = max(r.LastToken, failed.LastToken) // burned, never reissued
			s.setAlarmed(st, failed.CounterAlarm > 0, r.CounterAlarm > 0)
			st.res.Store(&r)
			s.track(st, &r)
		}
	}
}
