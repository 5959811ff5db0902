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
	working map[string]*state
	order   []*state
	events  []fenceview.Event
	serve   []handoff

	grants, renewals, releases, expiries int
	accepted, resets                     int
	rejected                             map[string]int
	alarms                               []fenceview.Resource

	presign *fenceview.Grant // the caller's grant, signed in finish (signing.go)

	prev []preimage // what applyLocked replaced, to undo a failed commit
	done chan error // the committer's verdict
}

type handoff struct {
	w *waiter
	g fenceview.Grant
}

// begin starts a batch. s.mu must be held until commit returns.
func (s *Service) begin() *batch {
	return &batch{s: s, now: s.clock.Now(), working: make(map[string]*state)}
}

// get returns the working copy of a resource, creating it if new.
func (b *batch) get(id string) *state {
	if w, ok := b.working[id]; ok {
		return w
	}
	w := &state{res: fenceview.Resource{ResourceID: id}}
	if st, ok := b.s.resources[id]; ok {
		w.res = st.res
		w.waiters = append([]*waiter(nil), st.waiters...)
	}
	b.working[id] = w
	b.order = append(b.order, w)
	return w
}

func (b *batch) event(e fenceview.Event) {
	if e.At.IsZero() {
		e.At = b.now
	}
	b.events = append(b.events, e)
}

// grant gives the lock to holder (of owner, the caller's key) with a new
// token.
func (b *batch) grant(w *state, holder, owner string, leaseMs int64) (fenceview.Grant, error) {
	token, err := nextToken(&w.res)
	if err != nil {
		return fenceview.Grant{}, err
	}
	r := &w.res
	if r.Holder == holder {
		r.HoldCount++
	} else {
		r.Holder, r.HoldCount = holder, 1
	}
	r.Owner = owner
	r.LastToken, r.Token = token, token
	r.LeaseMs = leaseMs
	r.GrantedAt = b.now
	r.ExpiresAt = b.now.Add(time.Duration(leaseMs) * time.Millisecond)
	b.event(fenceview.Event{Type: fenceview.EventGrant, ResourceID: r.ResourceID, Token: token, Holder: holder})
	b.grants++
	return b.s.grantOf(r), nil
}

func (b *batch) free(w *state) {
	r := &w.res
	r.Holder, r.Owner, r.HoldCount, r.Token = "", "", 0, 0
	r.ExpiresAt, r.GrantedAt = time.Time{}, time.Time{}
}

// expireIfDue records the expiry of a lease that has run out.
func (b *batch) expireIfDue(w *state) {
	if w.res.Holder != "" && !w.res.ExpiresAt.After(b.now) {
		b.expire(w, "lease-expired")
	}
}

// expire frees the lock, records why, and serves the first waiter.
func (b *batch) expire(w *state, why string) {
	holder, token := w.res.Holder, w.res.Token
	b.free(w)
	b.event(fenceview.Event{Type: fenceview.EventExpire, ResourceID: w.res.ResourceID, Token: token, Holder: holder, Reason: why})
	b.expiries++
	b.handOff(w)
}

// handOff grants a free lock to the first waiter, so queued waiters go
// before new arrivals.
func (b *batch) handOff(w *state) {
	if w.res.Holder != "" || len(w.waiters) == 0 {
		return
	}
	next := w.waiters[0]
	w.waiters = w.waiters[1:]
	g, err := b.grant(w, next.holder, next.owner, next.leaseMs)
	if err != nil {
		return // tokens exhausted: the waiter times out like any other
	}
	b.serve = append(b.serve, handoff{next, g})
}

// decide records a fencing decision: the mark, the counters and the event.
func (b *batch) decide(w *state, d guard.Decision, holder, source string, at time.Time) {
	r := &w.res
	before := max(r.HighWaterMark, r.LastToken)
	e := fenceview.Event{ResourceID: r.ResourceID, Token: d.Presented, Holder: holder, Source: source, At: at}
	if d.Accepted {
		r.HighWaterMark = max(r.HighWaterMark, d.Presented)
		r.Accepted++
		e.Type = fenceview.EventAccept
		b.accepted++
	} else {
		r.HighWaterMark = max(r.HighWaterMark, d.Required)
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
	// A mark above every token this server issued means its counter is
	// behind the tokens in use. Grants stay above the mark regardless
	// (nextToken); the alarm makes the loss visible until reset.
	if r.LastToken > 0 && r.HighWaterMark > before {
		r.CounterAlarm = r.HighWaterMark
		b.event(fenceview.Event{Type: fenceview.EventAlarm, ResourceID: r.ResourceID, Reason: fenceview.AlarmCounterBehind,
			Token: r.HighWaterMark, Required: r.LastToken, Source: source, At: at})
		b.alarms = append(b.alarms, *r)
	}
}
