package issuer

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/signedtest"
	"github.com/fenceview/fenceview/internal/sqlite"
)

func shared(t *testing.T, s *Service, res, holder string, lease time.Duration) fenceview.Grant {
	t.Helper()
	g, err := s.Acquire(ctx, fenceview.AcquireRequest{ResourceID: res, Holder: holder, Lease: lease, Shared: true})
	if err != nil {
		t.Fatalf("shared acquire of %s by %s: %v", res, holder, err)
	}
	if !g.Fencing.Shared {
		t.Fatalf("shared grant %+v does not say shared", g)
	}
	return g
}

func waitFor(t *testing.T, s *Service, res, holder string, isShared bool) chan result[fenceview.Grant] {
	t.Helper()
	return queue(t, s, func() (fenceview.Grant, error) {
		return s.Acquire(ctx, fenceview.AcquireRequest{ResourceID: res, Holder: holder, Lease: time.Minute, Wait: time.Hour, Shared: isShared})
	})
}

func release(t *testing.T, s *Service, res, holder string, wantLeft int) {
	t.Helper()
	if left, err := s.Release(ctx, res, holder); err != nil || left != wantLeft {
		t.Fatalf("release of %s by %s = %d, %v; want %d left", res, holder, left, err, wantLeft)
	}
}

// Readers of one phase share its token; a writer waits for every reader
// and takes the next token; the next phase takes the one after.
func TestReadersShareTheirPhasesToken(t *testing.T) {
	h := newHarness(t)
	a := shared(t, h.Service, "doc", "a", time.Minute)
	b := shared(t, h.Service, "doc", "b", time.Minute)
	if a.Fencing.Token != b.Fencing.Token || b.HoldCount != 1 {
		t.Fatalf("two readers of one phase: %+v and %+v", a, b)
	}
	if _, err := h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "doc", Holder: "w", Lease: time.Minute}); fenceview.ErrorCode(err) != fenceview.ELOCKHELD {
		t.Fatalf("a writer while readers hold: %v", err)
	}
	ls, _ := h.Lock("doc")
	if !ls.Locked || !ls.Shared || len(ls.Holders) != 2 || ls.Holders[0].Holder != "a" || ls.Holders[1].Holder != "b" || ls.LastToken != a.Fencing.Token {
		t.Fatalf("lock state %+v", ls)
	}
	writer := waitFor(t, h.Service, "doc", "w", false)
	release(t, h.Service, "doc", "a", 0)
	release(t, h.Service, "doc", "b", 0)
	w := answered(t, writer)
	if w.err != nil || w.v.Fencing.Token <= a.Fencing.Token || w.v.Fencing.Shared {
		t.Fatalf("the writer after the phase: %+v %v", w.v, w.err)
	}
	release(t, h.Service, "doc", "w", 0)
	c := shared(t, h.Service, "doc", "c", time.Minute)
	if c.Fencing.Token <= w.v.Fencing.Token {
		t.Fatalf("the next phase's token %d is not above the writer's %d", c.Fencing.Token, w.v.Fencing.Token)
	}
}

// First come, first served: a reader that comes after a waiting writer
// waits behind it (writers never starve), and the readers at the head of
// the queue are granted together, up to the next writer.
func TestAdmissionIsFirstComeFirstServed(t *testing.T) {
	h := newHarness(t)
	a := shared(t, h.Service, "doc", "a", time.Minute)
	w1 := waitFor(t, h.Service, "doc", "w1", false)
	r1 := waitFor(t, h.Service, "doc", "r1", true) // behind w1, not in a's phase
	r2 := waitFor(t, h.Service, "doc", "r2", true)
	w2 := waitFor(t, h.Service, "doc", "w2", false)
	r3 := waitFor(t, h.Service, "doc", "r3", true)
	release(t, h.Service, "doc", "a", 0)
	g1 := answered(t, w1)
	if g1.err != nil || g1.v.Fencing.Token <= a.Fencing.Token {
		t.Fatalf("w1: %+v %v", g1.v, g1.err)
	}
	if ls, _ := h.Lock("doc"); ls.Waiters != 4 {
		t.Fatalf("%d waiting while w1 holds, want r1, r2, w2 and r3", ls.Waiters)
	}
	release(t, h.Service, "doc", "w1", 0)
	g2, g3 := answered(t, r1), answered(t, r2)
	if g2.err != nil || g3.err != nil || g2.v.Fencing.Token != g3.v.Fencing.Token || g2.v.Fencing.Token <= g1.v.Fencing.Token {
		t.Fatalf("r1 and r2, granted together: %+v %v, %+v %v", g2.v, g2.err, g3.v, g3.err)
	}
	if ls, _ := h.Lock("doc"); ls.Waiters != 2 || len(ls.Holders) != 2 {
		t.Fatalf("after w1: %+v; want r1 and r2 holding, w2 and r3 waiting", ls)
	}
	release(t, h.Service, "doc", "r1", 0)
	release(t, h.Service, "doc", "r2", 0)
	g4 := answered(t, w2)
	release(t, h.Service, "doc", "w2", 0)
	g5 := answered(t, r3)
	if g4.v.Fencing.Token <= g3.v.Fencing.Token || g5.v.Fencing.Token <= g4.v.Fencing.Token || !g5.v.Fencing.Shared {
		t.Fatalf("w2 %+v then r3 %+v", g4.v, g5.v)
	}
}

// A writer that gives up at the head of a read phase's queue lets the
// readers behind it join the phase.
func TestReadersJoinWhenTheWriterAheadGivesUp(t *testing.T) {
	h := newHarness(t)
	a := shared(t, h.Service, "doc", "a", time.Minute)
	writer := queue(t, h.Service, func() (fenceview.Grant, error) {
		return h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "doc", Holder: "w", Lease: time.Minute, Wait: time.Second})
	})
	reader := waitFor(t, h.Service, "doc", "r", true)
	h.clock.Advance(time.Second) // the writer's wait ends
	if w := answered(t, writer); fenceview.ErrorCode(w.err) != fenceview.ELOCKHELD {
		t.Fatalf("the writer that gave up: %+v %v", w.v, w.err)
	}
	r := answered(t, reader)
	if r.err != nil || r.v.Fencing.Token != a.Fencing.Token {
		t.Fatalf("the reader behind it: %+v %v; want a's phase, token %d", r.v, r.err, a.Fencing.Token)
	}
}

// A reader's re-entrant acquire adds a hold and keeps the token; neither
// mode converts into the other.
func TestSharedReentryAndNoUpgrade(t *testing.T) {
	h := newHarness(t)
	g1 := shared(t, h.Service, "doc", "a", time.Minute)
	g2 := shared(t, h.Service, "doc", "a", time.Minute)
	if g2.HoldCount != 2 || g2.Fencing.Token != g1.Fencing.Token {
		t.Fatalf("re-entrant shared grant %+v after %+v", g2, g1)
	}
	_, err := h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "doc", Holder: "a", Lease: time.Minute, Wait: time.Hour})
	wantCode(t, err, fenceview.ELOCKHELD) // at once, though it would wait: it would wait for itself
	release(t, h.Service, "doc", "a", 1)
	release(t, h.Service, "doc", "a", 0)
	acquire(t, h.Service, "doc", "w", time.Minute)
	_, err = h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "doc", Holder: "w", Lease: time.Minute, Wait: time.Hour, Shared: true})
	wantCode(t, err, fenceview.ELOCKHELD)
	if _, err := h.Release(ctx, "doc", "a"); fenceview.ErrorCode(err) != fenceview.ENOTOWNER {
		t.Fatalf("a reader released after its phase, w holding: %v", err)
	}
}

// Each reader renews and loses its own lease; the phase lasts while any
// reader's does, and a lease that ran out with a lock-delay keeps a writer
// out until its end plus the delay.
func TestEachReaderHasItsOwnLease(t *testing.T) {
	h := newHarness(t)
	a := shared(t, h.Service, "doc", "a", 10*time.Second)
	if _, err := h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "doc", Holder: "b", Lease: 10 * time.Second, Shared: true, LockDelay: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(8 * time.Second)
	if g, err := h.Renew(ctx, "doc", "a", 0); err != nil || g.Fencing.Token != a.Fencing.Token || !g.Fencing.Shared || !g.ExpiresAt.Equal(h.clock.Now().Add(10*time.Second)) {
		t.Fatalf("a's renewal: %+v %v", g, err)
	}
	h.clock.Advance(3 * time.Second) // b's lease ran out, a's did not
	h.Sweep(ctx)
	ls, _ := h.Lock("doc")
	if !ls.Shared || len(ls.Holders) != 1 || ls.Holders[0].Holder != "a" {
		t.Fatalf("after b's lease ran out: %+v", ls)
	}
	if _, err := h.Renew(ctx, "doc", "b", 0); fenceview.ErrorCode(err) != fenceview.ELEASEEXPIRED {
		t.Fatalf("b's late renewal: %v", err)
	}
	release(t, h.Service, "doc", "a", 0)
	// b's lease ended 1s ago with a 5s delay: nobody writes for 4s more.
	_, err := h.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "doc", Holder: "w", Lease: time.Minute})
	wantCode(t, err, fenceview.ELOCKDELAY)
	h.clock.Advance(4 * time.Second)
	h.Sweep(ctx)
	acquire(t, h.Service, "doc", "w", time.Minute)
}

// Force-expire ends every shared hold, and the writer waiting gets the
// lock; a restart keeps the shared holds, their token and the counter.
func TestSharedHoldsSurviveRestartAndForceExpire(t *testing.T) {
	h := newHarness(t)
	a := shared(t, h.Service, "doc", "a", time.Minute)
	shared(t, h.Service, "doc", "b", 2*time.Minute)
	shared(t, h.Service, "doc", "b", 2*time.Minute)
	h.restart(t)
	ls, _ := h.Lock("doc")
	if !ls.Shared || len(ls.Holders) != 2 || ls.Holders[1].HoldCount != 2 || ls.LastToken != a.Fencing.Token {
		t.Fatalf("after a restart: %+v", ls)
	}
	c := shared(t, h.Service, "doc", "c", time.Minute)
	if c.Fencing.Token != a.Fencing.Token {
		t.Fatalf("a reader after the restart took %d, not the phase's %d", c.Fencing.Token, a.Fencing.Token)
	}
	// The server's fence still knows the live phase's token for a write.
	if d, err := h.Fence(ctx, fenceview.Fence{ResourceID: "doc", Token: guard.Token{Token: c.Fencing.Token}, Source: "test"}); err != nil || d.Reason != guard.ReasonSharedToken {
		t.Fatalf("a write with the live phase's token after a restart: %+v %v", d, err)
	}
	release(t, h.Service, "doc", "b", 1)
	writer := waitFor(t, h.Service, "doc", "w", false)
	if err := h.ForceExpire(ctx, "doc"); err != nil {
		t.Fatal(err)
	}
	w := answered(t, writer)
	if w.err != nil || w.v.Fencing.Token <= a.Fencing.Token {
		t.Fatalf("the writer after force-expire: %+v %v", w.v, w.err)
	}
	// The lock remembers one lease that ended (the last reader's).
	if _, err := h.Release(ctx, "doc", "c"); fenceview.ErrorCode(err) != fenceview.ELEASEEXPIRED {
		t.Fatalf("a forced-out reader's release: %v", err)
	}
	h.restart(t)
	release(t, h.Service, "doc", "w", 0)
	if g := shared(t, h.Service, "doc", "d", time.Minute); g.Fencing.Token <= w.v.Fencing.Token {
		t.Fatalf("after restarts the next phase took %d, not above %d", g.Fencing.Token, w.v.Fencing.Token)
	}
}

// The server's own fence: reads and writes meet one rule (token >= mark,
// the mark rises), so a later phase's read fences out a writer whose
// lease ran out and a later writer a reader whose phase ended; a write
// with a read phase's token is refused shared-token, during the phase and
// after it. Reads are events that say so.
func TestFenceReadsAndWrites(t *testing.T) {
	h := newHarness(t)
	fence := func(token int64, access string) guard.Decision {
		t.Helper()
		d, err := h.Fence(ctx, fenceview.Fence{ResourceID: "doc", Token: guard.Token{Token: token}, Access: access, Source: "test"})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	w := acquire(t, h.Service, "doc", "w", time.Second)
	h.clock.Advance(time.Second) // w's lease runs out; it does not know
	r := shared(t, h.Service, "doc", "r", time.Minute)
	if d := fence(r.Fencing.Token, fenceview.AccessWrite); d.Reason != guard.ReasonSharedToken || d.Required != 0 {
		t.Fatalf("a write with the phase's token: %+v", d)
	}
	if d := fence(r.Fencing.Token, fenceview.AccessRead); !d.Accepted {
		t.Fatalf("a read with it: %+v", d)
	}
	if d := fence(w.Fencing.Token, ""); d.Reason != guard.ReasonStale || d.Required != r.Fencing.Token {
		t.Fatalf("the expired writer after a later read: %+v", d)
	}
	release(t, h.Service, "doc", "r", 0)
	if d := fence(r.Fencing.Token, fenceview.AccessWrite); d.Reason != guard.ReasonSharedToken {
		t.Fatalf("a write with the ended phase's token: %+v", d)
	}
	w2 := acquire(t, h.Service, "doc", "w2", time.Minute)
	if d := fence(w2.Fencing.Token, ""); !d.Accepted {
		t.Fatalf("the next writer: %+v", d)
	}
	if d := fence(r.Fencing.Token, fenceview.AccessRead); d.Reason != guard.ReasonStale {
		t.Fatalf("a read of the ended phase after a later write: %+v", d)
	}
	if _, err := h.Fence(ctx, fenceview.Fence{ResourceID: "doc", Token: guard.Token{Token: 9}, Access: "READ"}); fenceview.ErrorCode(err) != fenceview.EINVALID {
		t.Fatalf("access READ: %v", err)
	}
	events, err := h.db.ResourceEvents(ctx, "doc", 50)
	if err != nil {
		t.Fatal(err)
	}
	var reads int
	for _, e := range events {
		if (e.Type == fenceview.EventAccept || e.Type == fenceview.EventReject) && e.Access == fenceview.AccessRead {
			reads++
		}
	}
	if reads != 2 {
		t.Fatalf("%d reads in the history, want 2: %+v", reads, events)
	}
}

// With --require-signatures, the signature says the mode: a shared
// grant's reads and never writes.
func TestSignedFenceReads(t *testing.T) {
	v, _ := guard.NewVerifier(signedtest.Public(signedtest.Old))
	s := newSignedService(t, v, true)
	g, err := s.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "doc", Holder: "r", Lease: time.Minute, Shared: true})
	if err != nil || !v.VerifyTextGrant("doc", g.Fencing.Token, true, g.Fencing.Signature) {
		t.Fatalf("a shared grant %+v %v: not signed as shared", g.Fencing, err)
	}
	for _, access := range []string{fenceview.AccessRead, fenceview.AccessWrite} {
		d, err := s.Fence(ctx, fenceview.Fence{ResourceID: "doc", Token: g.Fencing, Access: access, Source: "test"})
		if err != nil || d.Accepted != (access == fenceview.AccessRead) || (!d.Accepted && d.Reason != guard.ReasonSharedToken) {
			t.Fatalf("%s with the shared grant's token: %+v %v", access, d, err)
		}
	}
}

// A backup taken while readers hold restores their holds, the phase's
// token and the counter: a reader after the restore joins the phase, a
// writer's token is above it.
func TestSharedHoldsInABackup(t *testing.T) {
	h := newHarness(t)
	a := shared(t, h.Service, "doc", "a", time.Hour)
	shared(t, h.Service, "doc", "b", time.Hour)
	copyPath := filepath.Join(t.TempDir(), "copy.db")
	if _, err := sqlite.Backup(ctx, h.path, copyPath); err != nil {
		t.Fatal(err)
	}
	restored := &harness{clock: h.clock, path: copyPath}
	restored.open(t)
	ls, _ := restored.Lock("doc")
	if !ls.Shared || len(ls.Holders) != 2 || ls.LastToken != a.Fencing.Token {
		t.Fatalf("the restored lock: %+v", ls)
	}
	if c := shared(t, restored.Service, "doc", "c", time.Hour); c.Fencing.Token != a.Fencing.Token {
		t.Fatalf("a reader after the restore took %d, not the phase's %d", c.Fencing.Token, a.Fencing.Token)
	}
	for _, r := range []string{"a", "b", "c"} {
		release(t, restored.Service, "doc", r, 0)
	}
	if w := acquire(t, restored.Service, "doc", "w", time.Minute); w.Fencing.Token <= a.Fencing.Token {
		t.Fatalf("the writer after the restore took %d", w.Fencing.Token)
	}
}

// A reader's name is not a writer's: a multi-lock or a campaign by the
// holder of a shared hold, on that lock, is refused as held by another,
// and a release-all by it releases nothing there.
func TestPrimitivesDoNotTakeASharedHoldForTheirOwn(t *testing.T) {
	h := newHarness(t)
	r := shared(t, h.Service, "doc", "a", time.Minute)
	if _, err := h.AcquireAll(ctx, fenceview.AcquireAllRequest{ResourceIDs: []string{"doc", "other"}, Holder: "a", Lease: time.Minute}); fenceview.ErrorCode(err) != fenceview.ELOCKHELD {
		t.Fatalf("a multi-lock by the reader: %v", err)
	}
	if rel, err := h.ReleaseAll(ctx, []string{"doc"}, "a"); len(rel.Released) != 0 || err != nil && fenceview.ErrorCode(err) != fenceview.ENOTHELD {
		t.Fatalf("a release-all by the reader: %+v %v", rel, err)
	}
	if _, _, err := h.Campaign(ctx, fenceview.CampaignRequest{Election: "doc", Candidate: "a", Value: "v", Lease: time.Minute}); fenceview.ErrorCode(err) != fenceview.ELOCKHELD {
		t.Fatalf("a campaign by the reader: %v", err)
	}
	ls, _ := h.Lock("doc")
	if !ls.Shared || len(ls.Holders) != 1 || ls.LastToken != r.Fencing.Token {
		t.Fatalf("the lock after: %+v", ls)
	}
}
