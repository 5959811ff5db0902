package issuer

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
)

// Events reach subscribers after the service's mutex is released: while a
// delivery to one subscriber is held (as a stuck one would be, were sends
// blocking), the service keeps deciding and committing changes, and
// another subscriber still gets every event in commit order. The held
// change is answered only once its events are delivered.
func TestFanOutHoldsNoServiceLock(t *testing.T) {
	h := newHarness(t)
	stuck := h.Subscribe("r1", 16)
	all := h.Subscribe("", 16)
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h.hub.deliverHook = func(sub *Subscription) {
		if sub == stuck {
			once.Do(func() { close(held); <-release })
		}
	}
	first := make(chan error, 1)
	go func() {
		_, err := h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "r1", Holder: "a", Lease: time.Minute})
		first <- err
	}()
	<-held

	// Each of these needs s.mu, and the grant the committer too: were the
	// fan-out holding either, they would never return.
	if ls, err := h.Lock("r1"); err != nil || !ls.Locked || ls.Holder != "a" {
		t.Fatalf("r1 while its events are delivered: %+v, %v", ls, err)
	}
	_, err := h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "r1", Holder: "b", Lease: time.Minute})
	wantCode(t, err, fenceview.ELOCKHELD)
	g2 := acquire(t, h.Service, "r2", "b", time.Minute)
	select {
	case err := <-first:
		t.Fatalf("r1's grant was answered (%v) before its events reached every subscriber", err)
	default:
	}

	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if e := (<-stuck.Events())[0]; e.Type != fenceview.EventGrant || e.ResourceID != "r1" {
		t.Fatalf("the held subscriber got %+v", e.Event)
	}
	var got []string
	for len(got) < 2 {
		for _, p := range <-all.Events() {
			got = append(got, p.ResourceID)
		}
	}
	if got[0] != "r1" || got[1] != "r2" {
		t.Fatalf("events in the order %v, want r1's grant then r2's (token %d)", got, g2.Fencing.Token)
	}
}

// Concurrent commits deliver to each subscriber in sequence order, every
// event once: the unfiltered one sees every number from its start to the
// last, the filtered one its resource's events, rising.
func TestFanOutKeepsCommitOrderPerSubscriber(t *testing.T) {
	h := newHarness(t)
	all := h.Subscribe("", 1<<12)
	one := h.Subscribe("res-3", 1<<12)
	const clients, rounds = 8, 25
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, holder := fmt.Sprintf("res-%d", c), fmt.Sprintf("h%d", c)
			for range rounds {
				if _, err := h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: res, Holder: holder, Lease: time.Minute}); err != nil {
					t.Error(err)
					return
				}
				if _, err := h.Release(ctx, res, holder); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	last := h.LastSeq()
	if want := all.Start() + 2*clients*rounds; last != want {
		t.Fatalf("last sequence number %d, want %d", last, want)
	}
	next := all.Start() + 1
	for next <= last {
		for _, p := range <-all.Events() {
			if p.Seq != next {
				t.Fatalf("the unfiltered subscriber got event %d, want %d", p.Seq, next)
			}
			next++
		}
	}
	var prev int64
	for n := 0; n < 2*rounds; {
		for _, p := range <-one.Events() {
			if p.ResourceID != "res-3" || p.Seq <= prev {
				t.Fatalf("the filtered subscriber got %s's event %d after %d", p.ResourceID, p.Seq, prev)
			}
			prev = p.Seq
			n++
		}
	}
	for _, sub := range []fenceview.Subscription{all, one} {
		select {
		case <-sub.Lost():
			t.Fatal("a subscriber with room for every event was dropped")
		default:
		}
	}
}
