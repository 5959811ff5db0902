package issuer

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/sqlite"
)

// gatedStore holds each Apply until the test lets it through, and tells
// the test how many events each one carried.
type gatedStore struct {
	*sqlite.DB
	applying chan int      // the events of an Apply that started
	proceed  chan struct{} // lets one Apply go on
}

func (g *gatedStore) Apply(ctx context.Context, rows []*fenceview.Resource, events []fenceview.Event) error {
	g.applying <- len(events)
	<-g.proceed
	return g.DB.Apply(ctx, rows, events)
}

// A caller that finds no commit running commits its own change; changes
// made meanwhile wait for it, then go to the committer together as one
// group, and all are answered. Close waits for a caller still committing
// and for the group it handed over.
func TestCallerCommitsAloneThenHandsOver(t *testing.T) {
	ctx := context.Background()
	store := &gatedStore{DB: openDB(t), applying: make(chan int), proceed: make(chan struct{})}
	s, _ := newOnStore(store)

	fence := func(id string, errs chan<- error) {
		_, err := s.Fence(ctx, fenceview.Fence{ResourceID: id, Token: guard.Token{Token: 1}})
		errs <- err
	}
	first := make(chan error, 1)
	go fence("a", first)
	if n := <-store.applying; n != 1 {
		t.Fatalf("the first commit carries %d events, want its caller's 1", n)
	}
	// The first caller is committing: these queue behind it.
	rest := make(chan error, 3)
	var queued sync.WaitGroup
	for i := range 3 {
		queued.Add(1)
		go func() { defer queued.Done(); fence(fmt.Sprintf("b%d", i), rest) }()
	}
	waitQueued(t, s, 3)
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()

	store.proceed <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if n := <-store.applying; n != 3 {
		t.Fatalf("the changes queued meanwhile were committed as a group of %d events, want 3", n)
	}
	select {
	case <-closed:
		t.Fatal("Close returned with a group in flight")
	default:
	}
	store.proceed <- struct{}{}
	queued.Wait()
	for range 3 {
		if err := <-rest; err != nil {
			t.Fatal(err)
		}
	}
	<-closed
	if got := s.LastSeq(); got != 4 {
		t.Fatalf("last seq %d, want 4", got)
	}
}

// waitQueued waits until n batches wait for the committer.
func waitQueued(t *testing.T, s *Service, n int) {
	t.Helper()
	for {
		s.mu.Lock()
		q := len(s.queue)
		s.mu.Unlock()
		if q == n {
			return
		}
		if q > n {
			t.Fatalf("%d batches queued, want %d", q, n)
		}
		runtime.Gosched()
	}
}

// failingStore holds each Apply until the test lets it through, then fails
// it as a full disk would.
type failingStore struct {
	applying chan struct{}
	proceed  chan struct{}
}

func (f *failingStore) Apply(context.Context, []*fenceview.Resource, []fenceview.Event) error {
	f.applying <- struct{}{}
	<-f.proceed
	return fmt.Errorf("disk full")
}

// Readers see committed state only: a grant applied in memory whose commit
// is still running, and then fails, is never seen, by the lock's state,
// a resource page, the totals or a semaphore's state. (A leader killed
// mid-commit in cluster mode had readers see a slot held that the next
// leader never had.)
func TestReadersSeeOnlyCommittedChanges(t *testing.T) {
	store := &failingStore{applying: make(chan struct{}), proceed: make(chan struct{})}
	committed := fenceview.Resource{ResourceID: "jobs#0", LastToken: 4, Permits: 2}
	s, _ := newOnStore(store, &committed)
	defer s.Close()
	release := sync.OnceFunc(func() { close(store.proceed) })
	defer release() // before Close, which waits for the commit, should a check fail
	errc := make(chan error, 1)
	go func() {
		_, err := s.AcquirePermit(ctx, fenceview.PermitRequest{Semaphore: "jobs", Holder: "a", Permits: 2, Lease: time.Minute})
		errc <- err
	}()
	<-store.applying // applied in memory, not yet durable
	check := func(when string) {
		t.Helper()
		if ls, _ := s.Lock("jobs#0"); ls.Locked || ls.LastToken != 4 {
			t.Fatalf("%s: the lock reads %+v", when, ls)
		}
		if sem, err := s.Semaphore("jobs"); err != nil || len(sem.Held) != 0 || sem.Free != 2 {
			t.Fatalf("%s: the semaphore reads %+v %v", when, sem, err)
		}
		if _, held, _, _ := s.Totals(fenceview.Scope{}); held != 0 {
			t.Fatalf("%s: %d held in the totals", when, held)
		}
		page, _ := s.ListResources("", "", 10, fenceview.Scope{})
		if len(page) != 1 || page[0].Holder != "" {
			t.Fatalf("%s: the page reads %+v", when, page)
		}
	}
	check("during the commit")
	release()
	if err := <-errc; fenceview.ErrorCode(err) != fenceview.EUNAVAILABLE {
		t.Fatalf("the acquire whose commit failed: %v", err)
	}
	check("after the commit failed")
}

// A refusal decided on a grant still being committed waits for that
// commit: answered "lock held" once it is durable, errUnavailable if it
// failed (the grant it named never happened).
func TestRefusalWaitsForTheGrantItNames(t *testing.T) {
	h := holdGrant(t, func(s *Service, answer func(error)) {
		go func() {
			_, err := s.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: "a", Lease: time.Minute})
			answer(err)
		}()
	})
	refused := make(chan error, 1)
	go func() {
		_, err := h.s.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "r", Holder: "b", Lease: time.Minute})
		refused <- err
	}()
	select {
	case err := <-refused:
		t.Fatalf("refused before the grant it names was durable: %v", err)
	case <-h.settling: // the refusal waits for the grant's commit
	}
	h.failsWithTheGrant(t, refused)
}

// heldGrant is a grant of r to a whose commit the store holds until
// release, then fails: what a refusal decided meanwhile names.
type heldGrant struct {
	s        *Service
	first    chan error    // the grant's answer
	settling chan struct{} // a refusal began waiting for the grant's commit
	release  func()        // lets the commit go on, and fail
}

// holdGrant starts the grant with grant, which calls answer with its
// error, and returns once its commit is being applied.
func holdGrant(t *testing.T, grant func(s *Service, answer func(error))) *heldGrant {
	t.Helper()
	store := &failingStore{applying: make(chan struct{}), proceed: make(chan struct{})}
	s, _ := newOnStore(store)
	t.Cleanup(func() { s.Close() })
	h := &heldGrant{s: s, first: make(chan error, 1), settling: make(chan struct{}, 1),
		release: sync.OnceFunc(func() { close(store.proceed) })}
	t.Cleanup(h.release) // before Close, which waits for the commit, should a check fail
	grant(s, func(err error) { h.first <- err })
	<-store.applying
	s.mu.Lock()
	s.settlingHook = func() { h.settling <- struct{}{} }
	s.mu.Unlock()
	return h
}

// failsWithTheGrant checks that refused has no answer while the grant is
// being committed, then lets the commit fail: the grant and the refusal
// that named it are both answered unavailable.
func (h *heldGrant) failsWithTheGrant(t *testing.T, refused <-chan error) {
	t.Helper()
	select {
	case err := <-refused:
		t.Fatalf("answered while the grant it names is still being committed: %v", err)
	default:
	}
	h.release()
	if err := <-h.first; fenceview.ErrorCode(err) != fenceview.EUNAVAILABLE {
		t.Fatalf("the grant whose commit failed: %v", err)
	}
	if err := <-refused; fenceview.ErrorCode(err) != fenceview.EUNAVAILABLE {
		t.Fatalf("the refusal naming a grant that failed: %v, want unavailable", err)
	}
}

// A wait that runs out is refused from the state of that moment, which may
// hold a change still being committed: like an immediate refusal, it is
// answered once that change is durable, and fails with it. (A multi-lock
// refused after its wait, naming a lock whose grant then failed, let a
// reader see that lock free after the refusal said it was held.)
func TestRefusalAfterAWaitWaitsForTheGrantItNames(t *testing.T) {
	store := &failingStore{applying: make(chan struct{}), proceed: make(chan struct{})}
	held := fenceview.Resource{ResourceID: "r", Holder: "a", Token: 1, LastToken: 1, HoldCount: 1,
		LeaseMs: time.Hour.Milliseconds(), GrantedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	s, fake := newOnStore(store, &held)
	defer s.Close()
	release := sync.OnceFunc(func() { close(store.proceed) })
	defer release()
	queued := make(chan struct{})
	s.mu.Lock()
	s.queuedHook = func(string, string) { close(queued) }
	s.mu.Unlock()
	refused := make(chan error, 1)
	go func() {
		_, err := s.AcquireAll(ctx, fenceview.AcquireAllRequest{ResourceIDs: []string{"r", "q"}, Holder: "b", Lease: time.Minute, Wait: time.Second})
		refused <- err
	}()
	<-queued
	granted := make(chan error, 1)
	go func() {
		_, err := s.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "q", Holder: "c", Lease: time.Minute})
		granted <- err
	}()
	<-store.applying // q's grant is applied in memory, not yet durable
	settling := make(chan struct{}, 1)
	s.mu.Lock()
	s.settlingHook = func() { settling <- struct{}{} }
	s.mu.Unlock()
	fake.Advance(time.Second) // b's wait runs out
	select {
	case err := <-refused:
		t.Fatalf("refused after its wait before the grant it names was durable: %v", err)
	case <-settling:
	}
	release()
	if err := <-granted; fenceview.ErrorCode(err) != fenceview.EUNAVAILABLE {
		t.Fatalf("the grant whose commit failed: %v", err)
	}
	if err := <-refused; fenceview.ErrorCode(err) != fenceview.EUNAVAILABLE {
		t.Fatalf("the refusal naming a grant that failed: %v, want unavailable", err)
	}
}
