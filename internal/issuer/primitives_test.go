package issuer

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
)

// conflict returns err's fields, failing unless it is the refusal of
// message, with its code.
func conflict(t *testing.T, err error, message string) map[string]any {
	t.Helper()
	codes := map[string]string{"lock delay": fenceview.ELOCKDELAY, "lock held": fenceview.ELOCKHELD,
		"no permit free": fenceview.ENOPERMIT, "permits mismatch": fenceview.EPERMITSMISMATCH}
	var fe *fenceview.Error
	if !errors.As(err, &fe) || fe.Code != codes[message] || fe.Message != message {
		t.Fatalf("err = %v, want conflict %q", err, message)
	}
	return fe.Fields
}

// queue runs f in a goroutine and returns its answer's channel, once the
// service has queued it (the queued hook), so the test goes on knowing it
// waits.
func queue[T any](t *testing.T, s *Service, f func() (T, error)) chan result[T] {
	t.Helper()
	queued := make(chan struct{}, 1)
	s.queuedHook = func(string, string) { queued <- struct{}{} }
	out := make(chan result[T], 1)
	go func() {
		v, err := f()
		out <- result[T]{v, err}
	}()
	select {
	case <-queued:
	case r := <-out:
		t.Fatalf("answered instead of waiting: %+v", r)
	}
	s.queuedHook = nil
	return out
}

type result[T any] struct {
	v   T
	err error
}

// expireIntoDelay lets a's one-second lease on "r", with lock-delay
// delay, run out and be swept: the delay starts.
func (h *harness) expireIntoDelay(t *testing.T, delay time.Duration) fenceview.Grant {
	t.Helper()
	g, err := h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: "a", Lease: time.Second, LockDelay: delay})
	if err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Second)
	h.Sweep(ctx)
	return g
}

func TestLockDelayKeepsAnUnreleasedLockFromEveryone(t *testing.T) {
	h := newHarness(t)
	g := h.expireIntoDelay(t, 10*time.Second)
	ends := g.ExpiresAt.Add(10 * time.Second)
	for _, holder := range []string{"a", "b"} { // the old holder too
		_, err := h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: holder, Lease: time.Minute})
		if f := conflict(t, err, "lock delay"); !f["availableAt"].(time.Time).Equal(ends) {
			t.Fatalf("availableAt %v, want %v", f["availableAt"], ends)
		}
	}
	if ls, _ := h.Lock("r"); ls.Locked || !ls.AvailableAt.Equal(ends) {
		t.Fatalf("lock in its delay: %+v", ls)
	}
	evs, _ := h.db.EventsAfter(ctx, 0, "r", 10)
	if last := evs[len(evs)-1]; last.Type != fenceview.EventExpire || last.LockDelayMs != 10000 {
		t.Fatalf("the expiry's event: %+v", last)
	}
	// A waiter keeps waiting through the delay and is served when it ends.
	waiting := queue(t, h.Service, func() (fenceview.Grant, error) {
		return h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: "w", Lease: time.Minute, Wait: time.Minute})
	})
	h.clock.Advance(9 * time.Second)
	h.Sweep(ctx)
	select {
	case r := <-waiting:
		t.Fatalf("served inside the delay: %+v", r)
	default:
	}
	h.clock.Advance(time.Second)
	h.Sweep(ctx)
	r := <-waiting
	if r.err != nil || r.v.Holder != "w" || r.v.Fencing.Token <= g.Fencing.Token {
		t.Fatalf("the waiter after the delay: %+v", r)
	}
	if ls, _ := h.Lock("r"); !ls.AvailableAt.IsZero() {
		t.Fatalf("a delay still shown after it ended: %+v", ls)
	}
}

func TestLockDelayEndsAtOnceOnReleaseOrForce(t *testing.T) {
	h := newHarness(t)
	delayed := fenceview.AcquireRequest{ResourceID: "r", Holder: "a", Lease: time.Second, LockDelay: time.Minute}
	if _, err := h.Acquire(ctx, delayed); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	acquire(t, h.Service, "r", "b", time.Second) // released: no delay
	h.Release(ctx, "r", "b")

	if _, err := h.Acquire(ctx, delayed); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Second)
	h.Sweep(ctx)
	waiting := queue(t, h.Service, func() (fenceview.Grant, error) {
		return h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: "w", Lease: time.Minute, Wait: time.Minute})
	})
	if err := h.ForceExpire(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	if r := <-waiting; r.err != nil || r.v.Holder != "w" {
		t.Fatalf("the waiter after a forced end of the delay: %+v", r)
	}
}

func TestLockDelaySurvivesARestart(t *testing.T) {
	h := newHarness(t)
	g := h.expireIntoDelay(t, 30*time.Second)
	h.restart(t)
	_, err := h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: "b", Lease: time.Minute})
	conflict(t, err, "lock delay")
	h.clock.Advance(30 * time.Second)
	if g2 := acquire(t, h.Service, "r", "b", time.Minute); g2.Fencing.Token <= g.Fencing.Token {
		t.Fatalf("after the delay: token %d, before %d", g2.Fencing.Token, g.Fencing.Token)
	}
}

func permit(h *harness, holder string, permits int, wait time.Duration) (fenceview.Grant, error) {
	return h.AcquirePermit(ctx, fenceview.PermitRequest{Semaphore: "jobs", Holder: holder, Permits: permits, Lease: time.Minute, Wait: wait})
}

func TestSemaphoreGrantsTheLowestFreeSlot(t *testing.T) {
	h := newHarness(t)
	var grants []fenceview.Grant
	for i, holder := range []string{"a", "b", "a"} { // a holder may hold several
		g, err := permit(h, holder, 3, 0)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("jobs#%d", i); g.ResourceID != want || g.Holder != holder {
			t.Fatalf("permit %d: %+v, want %s", i, g, want)
		}
		grants = append(grants, g)
	}
	_, err := permit(h, "c", 3, 0)
	if f := conflict(t, err, "no permit free"); f["permits"] != 3 {
		t.Fatalf("fields %v", f)
	}
	_, err = permit(h, "c", 4, 0)
	if f := conflict(t, err, "permits mismatch"); f["permits"] != 3 {
		t.Fatalf("fields %v", f)
	}
	// FCFS for any slot, the slot's tokens going up.
	first := queue(t, h.Service, func() (fenceview.Grant, error) { return permit(h, "w1", 3, time.Minute) })
	second := queue(t, h.Service, func() (fenceview.Grant, error) { return permit(h, "w2", 3, time.Minute) })
	if _, err := h.ReleasePermit(ctx, "jobs", "b", 1); err != nil {
		t.Fatal(err)
	}
	r := <-first
	if r.err != nil || r.v.ResourceID != "jobs#1" || r.v.Holder != "w1" || r.v.Fencing.Token <= grants[1].Fencing.Token {
		t.Fatalf("first waiter: %+v", r)
	}
	sem, err := h.Semaphore("jobs")
	if err != nil || sem.Permits != 3 || len(sem.Held) != 3 || sem.Free != 0 || sem.Waiters != 1 {
		t.Fatalf("semaphore: %+v %v", sem, err)
	}
	// Fewer permits: slot 2 stays held, and once released is not granted.
	if _, err := h.SetPermits(ctx, "jobs", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ReleasePermit(ctx, "jobs", "a", 2); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-second:
		t.Fatalf("a slot above the permits was granted: %+v", r)
	default:
	}
	// More permits: the waiter is served by a new slot at once.
	if _, err := h.SetPermits(ctx, "jobs", 4); err != nil {
		t.Fatal(err)
	}
	if r := <-second; r.err != nil || r.v.ResourceID != "jobs#2" {
		t.Fatalf("second waiter after the permits grew: %+v", r)
	}
	h.restart(t)
	if sem, err := h.Semaphore("jobs"); err != nil || sem.Permits != 4 {
		t.Fatalf("permits after a restart: %+v %v", sem, err)
	}
}

func TestSemaphoreNeverHasMoreHoldersThanPermits(t *testing.T) {
	h := newHarness(t)
	const permits, workers, rounds = 3, 8, 30
	done := make(chan error, workers)
	for w := range workers {
		go func() {
			holder := fmt.Sprintf("w%d", w)
			for range rounds {
				g, err := permit(h, holder, permits, time.Hour)
				if err != nil {
					done <- err
					return
				}
				_, slot, _ := fenceview.ParseSlotID(g.ResourceID)
				if slot >= permits {
					done <- fmt.Errorf("slot %d of %d permits", slot, permits)
					return
				}
				if sem, _ := h.Semaphore("jobs"); len(sem.Held) > permits {
					done <- fmt.Errorf("%d holders of %d permits", len(sem.Held), permits)
					return
				}
				if _, err := h.ReleasePermit(ctx, "jobs", holder, slot); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range workers {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	// Every slot's grants took strictly increasing tokens.
	for i := range permits {
		evs, err := h.db.EventsAfter(ctx, 0, fenceview.SlotID("jobs", i), 10000)
		if err != nil {
			t.Fatal(err)
		}
		var last int64
		for _, e := range evs {
			if e.Type == fenceview.EventGrant {
				if e.Token <= last {
					t.Fatalf("slot %d: token %d after %d", i, e.Token, last)
				}
				last = e.Token
			}
		}
	}
}

func TestMultiLockIsAllOrNothing(t *testing.T) {
	h := newHarness(t)
	acquire(t, h.Service, "b", "other", time.Minute)
	_, err := h.AcquireAll(ctx, fenceview.AcquireAllRequest{ResourceIDs: []string{"a", "b", "c"}, Holder: "m", Lease: time.Minute})
	held := conflict(t, err, "lock held")["held"].([]map[string]any)
	if len(held) != 1 || held[0]["resourceId"] != "b" || held[0]["holder"] != "other" {
		t.Fatalf("held: %v", held)
	}
	for _, id := range []string{"a", "c"} {
		if ls, _ := h.Lock(id); ls.Locked || ls.LastToken != 0 {
			t.Fatalf("%s after a refused multi-lock: %+v", id, ls)
		}
	}
	// Waiting holds none: a is free to others meanwhile.
	waiting := queue(t, h.Service, func() ([]fenceview.Grant, error) {
		return h.AcquireAll(ctx, fenceview.AcquireAllRequest{ResourceIDs: []string{"a", "b", "c"}, Holder: "m", Lease: time.Minute, Wait: time.Minute})
	})
	if ls, _ := h.Lock("a"); ls.Locked {
		t.Fatalf("a waiting multi-lock holds a: %+v", ls)
	}
	seq := h.LastSeq()
	h.Release(ctx, "b", "other")
	r := <-waiting
	if r.err != nil || len(r.v) != 3 {
		t.Fatalf("multi-lock after the release: %+v", r)
	}
	for i, id := range []string{"a", "b", "c"} {
		if r.v[i].ResourceID != id || r.v[i].Holder != "m" {
			t.Fatalf("grant %d: %+v", i, r.v[i])
		}
	}
	// One change: the release and the three grants in one commit, in order.
	evs, _ := h.db.EventsAfter(ctx, seq, "", 10)
	var types []string
	for _, e := range evs {
		types = append(types, e.Type+":"+e.ResourceID)
	}
	if got := strings.Join(types, " "); got != "release:b grant:a grant:b grant:c" {
		t.Fatalf("events: %s", got)
	}
	out, err := h.ReleaseAll(ctx, []string{"a", "b", "c", "d"}, "m")
	if err != nil || len(out.Released) != 3 || len(out.NotHeld) != 1 || out.NotHeld[0] != "d" {
		t.Fatalf("release-all: %+v %v", out, err)
	}
}

// Two multi-locks over the same locks in opposite orders, each waiting:
// neither holds part of its set, so both are granted in turn.
func TestMultiLocksDoNotDeadlock(t *testing.T) {
	h := newHarness(t)
	const rounds = 50
	done := make(chan error, 2)
	for i, ids := range [][]string{{"x", "y"}, {"y", "x"}} {
		go func() {
			holder := fmt.Sprintf("m%d", i)
			for range rounds {
				gs, err := h.AcquireAll(ctx, fenceview.AcquireAllRequest{ResourceIDs: ids, Holder: holder, Lease: time.Minute, Wait: time.Hour})
				if err != nil {
					done <- err
					return
				}
				for _, g := range gs {
					if ls, _ := h.Lock(g.ResourceID); ls.Holder != holder {
						done <- fmt.Errorf("%s: %+v while %s holds the set", g.ResourceID, ls, holder)
						return
					}
				}
				if _, err := h.ReleaseAll(ctx, ids, holder); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func TestElectionTermIsTheToken(t *testing.T) {
	h := newHarness(t)
	campaign := func(who, value string, wait time.Duration) (fenceview.Leader, error) {
		l, _, err := h.Campaign(ctx, fenceview.CampaignRequest{Election: "leader", Candidate: who, Value: value, Lease: time.Minute, Wait: wait})
		return l, err
	}
	a, err := campaign("a", "10.0.0.1", 0)
	if err != nil || a.Candidate != "a" || a.Value != "10.0.0.1" || a.Term == 0 {
		t.Fatalf("first campaign: %+v %v", a, err)
	}
	_, err = campaign("b", "10.0.0.2", 0)
	if l := conflict(t, err, "lock held")["leader"].(map[string]any); l["candidate"] != "a" || l["term"] != a.Term {
		t.Fatalf("leader field: %v", l)
	}
	if _, err := h.Proclaim(ctx, "leader", "b", "x"); !errors.Is(err, errNotLeader) {
		t.Fatalf("a proclaim by a follower: %v", err)
	}
	if l, err := h.Proclaim(ctx, "leader", "a", "10.0.0.9"); err != nil || l.Term != a.Term || l.Value != "10.0.0.9" {
		t.Fatalf("proclaim: %+v %v", l, err)
	}
	if again, err := campaign("a", "10.0.0.9", 0); err != nil || again.Term != a.Term {
		t.Fatalf("the leader campaigning again: %+v %v", again, err)
	}
	b := queue(t, h.Service, func() (fenceview.Leader, error) { return campaign("b", "10.0.0.2", time.Minute) })
	if err := h.Resign(ctx, "leader", "a"); err != nil {
		t.Fatal(err)
	}
	r := <-b
	if r.err != nil || r.v.Candidate != "b" || r.v.Term <= a.Term || r.v.Value != "10.0.0.2" {
		t.Fatalf("the next leader: %+v", r)
	}
	if l, _ := h.Leader("leader"); l == nil || *l != r.v {
		t.Fatalf("Leader: %+v, want %+v", l, r.v)
	}
	// The history tells every leader and value in order.
	evs, _ := h.db.EventsAfter(ctx, 0, "leader", 100)
	var got []string
	for _, e := range evs {
		got = append(got, fmt.Sprintf("%s:%s:%s", e.Type, e.Holder, e.Value))
	}
	if s := strings.Join(got, " "); s != "grant:a:10.0.0.1 proclaim:a:10.0.0.9 release:a: grant:b:10.0.0.2" {
		t.Fatalf("history: %s", s)
	}
	h.clock.Advance(time.Minute)
	if l, _ := h.Leader("leader"); l != nil {
		t.Fatalf("a leader past its lease: %+v", l)
	}
}

func TestPrimitivesRefuseBadInput(t *testing.T) {
	h := newHarness(t)
	long := strings.Repeat("n", fenceview.MaxSemaphoreNameLen+1)
	var ids65 []string
	for i := range 65 {
		ids65 = append(ids65, fmt.Sprint("r", i))
	}
	for name, err := range map[string]error{
		"lock-delay over a minute": func() error {
			_, err := h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: "a", LockDelay: time.Minute + time.Millisecond})
			return err
		}(),
		"negative lock-delay": func() error {
			_, err := h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: "a", LockDelay: -time.Millisecond})
			return err
		}(),
		"no permits": func() error { _, err := permit(h, "a", 0, 0); return err }(),
		"1025 permits": func() error {
			_, err := permit(h, "a", fenceview.MaxPermits+1, 0)
			return err
		}(),
		"a semaphore name with #": func() error {
			_, err := h.AcquirePermit(ctx, fenceview.PermitRequest{Semaphore: "a#b", Holder: "a", Permits: 1})
			return err
		}(),
		"a semaphore name too long": func() error {
			_, err := h.AcquirePermit(ctx, fenceview.PermitRequest{Semaphore: long, Holder: "a", Permits: 1})
			return err
		}(),
		"no resources": func() error {
			_, err := h.AcquireAll(ctx, fenceview.AcquireAllRequest{Holder: "a"})
			return err
		}(),
		"65 resources": func() error {
			_, err := h.AcquireAll(ctx, fenceview.AcquireAllRequest{ResourceIDs: ids65, Holder: "a"})
			return err
		}(),
		"a resource twice": func() error {
			_, err := h.AcquireAll(ctx, fenceview.AcquireAllRequest{ResourceIDs: []string{"a", "b", "a"}, Holder: "a"})
			return err
		}(),
		"a value over 4 KiB": func() error {
			_, _, err := h.Campaign(ctx, fenceview.CampaignRequest{Election: "e", Candidate: "a", Value: strings.Repeat("v", 4097)})
			return err
		}(),
		"a value that is not UTF-8": func() error {
			_, _, err := h.Campaign(ctx, fenceview.CampaignRequest{Election: "e", Candidate: "a", Value: "\xff"})
			return err
		}(),
	} {
		if fenceview.ErrorCode(err) != fenceview.EINVALID {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
	if n := len(h.Resources()); n != 0 {
		t.Fatalf("bad input created %d resources", n)
	}
}

func TestMetricsCountGrantsAndWaitersByKind(t *testing.T) {
	h := newHarness(t)
	acquire(t, h.Service, "lock", "a", time.Minute)
	if _, err := permit(h, "a", 1, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := h.AcquireAll(ctx, fenceview.AcquireAllRequest{ResourceIDs: []string{"x", "y"}, Holder: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Campaign(ctx, fenceview.CampaignRequest{Election: "e", Candidate: "a"}); err != nil {
		t.Fatal(err)
	}
	waiting := queue(t, h.Service, func() (fenceview.Grant, error) { return permit(h, "b", 1, time.Minute) })
	got := map[string][2]int64{}
	for _, k := range h.Metrics().Kinds {
		got[k.Kind.String()] = [2]int64{k.Grants, int64(k.Waiters)}
	}
	want := map[string][2]int64{"lock": {1, 0}, "semaphore": {1, 1}, "multi": {2, 0}, "election": {1, 0}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("by kind %v, want %v", got, want)
	}
	h.ReleasePermit(ctx, "jobs", "a", 0)
	<-waiting
	for _, k := range h.Metrics().Kinds {
		if k.Waiters != 0 {
			t.Fatalf("%s: %d waiters after the waiter was served", k.Kind, k.Waiters)
		}
	}
}
