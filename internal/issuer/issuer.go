// Package issuer is fenceview's lock authority: it grants leases, issues
// fencing tokens, keeps each resource's high-water mark, decides fenced
// writes presented to the server, and publishes every change as an event.
//
// State is served from memory; SQLite is the durable record. A change is
// computed under one mutex, applied in memory at once (so the next change
// builds on it) and queued; a committer writes everything queued in one
// transaction and one fsync (group commit), and only then are the changes
// answered, published and handed to waiters. Memory may run ahead of the disk
// by the changes in flight, never the answers, and never what readers see:
// they read each resource as of its last commit, and a refusal decided on
// a change still in flight is answered once that change is durable.
//
// A failed commit fails every change in flight and undoes them in memory,
// keeping the token counters where they were: a token that may have reached
// the disk is never handed out again.
package issuer

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/btree"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/clock"
)

// Store is the durable record the service writes through.
type Store interface {
	// Apply writes resource rows and events in one durable transaction.
	Apply(ctx context.Context, resources []*fenceview.Resource, events []fenceview.Event) error
}

// Config configures a Service.
type Config struct {
	Issuer string      // the issuer id in every token envelope
	Clock  clock.Clock // defaults to the wall clock
	Logger *slog.Logger
	// SweepInterval is how often leases are checked for expiry; an expired
	// lease emits its expire event within one interval.
	SweepInterval time.Duration
	// MaxResources bounds the resources the service knows (default
	// DefaultMaxResources): a change that would create one more is
	// refused, and the known ones keep being served.
	MaxResources int
	// MaxWaiters bounds the acquires waiting for a lock at once, across
	// every client (default DefaultMaxWaiters).
	MaxWaiters int
	// Signer, when set, signs every grant (see signing.go).
	Signer Signer
	// Verifier checks signatures presented to the server: reports that
	// carry one, and fenced writes when RequireSignatures is set.
	Verifier          *guard.Verifier
	RequireSignatures bool
	// Observer, when set, learns how each group commit went (metrics).
	Observer CommitObserver
	// Queued, when set, is called once a request that waits has joined
	// its queue (a lock's, a semaphore's, a multi-lock's or an
	// election's), with the resource it waits on and its holder: a test
	// of what happens to waiters waits for it instead of polling.
	Queued func(resourceID, holder string)
}

// CommitObserver learns the duration and size of each group commit.
type CommitObserver interface {
	ObserveCommit(d time.Duration, changes int, err error)
}

// Defaults of the limits in Config.
const (
	DefaultMaxResources = 1_000_000
	DefaultMaxWaiters   = 10_000
)

// Service is the lock authority. Its methods are safe for concurrent use.
//
// Every method that changes state takes a ctx, but only Acquire consults
// it, to give up waiting for a held lock. A change is made in memory and
// committed as one step; a caller that goes away cannot cut it short,
// because a token, once taken, must reach the disk before anything else
// builds on it. The ctx is there so that callers need not change when a
// method learns to wait (as Acquire does).
type Service struct {
	store  Store
	clock  clock.Clock
	issuer string
	log    *slog.Logger
	obs    CommitObserver
	limits Config

	mu        sync.Mutex
	resources map[string]*known
	held      map[string]*known    // resources with a holder, for the sweep
	delayed   map[string]*known    // resources in a lock-delay, for the sweep
	permitQ   map[string][]*waiter // a semaphore's waiters, by name (semaphore.go)
	multi     map[string][]*waiter // multi-locks waiting, by each of their locks, first come first served (multilock.go)
	seq       int64                // last event sequence number assigned
	published int64                // last event sequence number durable and published
	lost      int64                // last event sequence number a failed commit undid
	settled   sync.Cond            // on s.mu: published or lost moved (settleLocked)
	waiting   int
	waitingBy [kinds]int
	alarmed   map[string]*known // resources with a counter alarm
	// index and alarmIndex hold every known resource, and those with a
	// counter alarm, ordered by id: readers walk clones of them, outside
	// s.mu (see snapshot).
	index, alarmIndex *btree.BTreeG[*known]
	hub               hub // subscribers (stream.go)
	closed            bool
	closing           chan struct{} // closed with closed set (Closing)
	queue             []*batch      // applied in memory, waiting for the committer
	// committing is set while a commit runs, in the committer or in a
	// caller that found none running (finish).
	committing bool
	callers    sync.WaitGroup // callers committing their own change
	delivering sync.WaitGroup // the committer's deliveries still running (commitLoop)
	metrics    counters

	kick       chan struct{} // wakes the committer
	stop       chan struct{} // stops the sweep loop
	done       chan struct{} // the sweep loop has stopped
	stopCommit chan struct{}
	commitDone chan struct{}

	// queuedHook (Config.Queued), when set, runs after a waiter joins a queue.
	queuedHook func(resourceID, holder string)
	// settlingHook, when set by tests, runs (under s.mu) when an answer
	// starts waiting for the changes it was decided on (settleLocked).
	settlingHook func()

	signed signedConfig // signing.go
}

// state is a batch's working copy of a resource (see batch).
type state struct {
	res     fenceview.Resource
	waiters []*waiter // first come, first served
}

type waiter struct {
	grantReq
	result chan waitResult // buffered; written once, or closed on shutdown
	ids    []string        // a multi-lock's resources (multilock.go)
	sem    string          // a semaphore's name, for its waiters (semaphore.go)
	// How long it may wait, how to take it out of its queue when it gives
	// up (await), and the resource queuedHook names.
	wait     time.Duration
	dequeue  func() (error, bool)
	queuedOn string
}

// waitResult is what a change answers. The grant is a pointer so that the
// answer stays small on the stack of every waiting acquire (frames hold
// it at each level) and so the committer can sign it in place (presign).
type waitResult struct {
	grant  *fenceview.Grant
	grants []fenceview.Grant // a multi-lock's
	err    error
}

// New returns a service over store, starting from the resources and the
// last event sequence number already recorded there.
func New(store Store, resources []*fenceview.Resource, lastSeq int64, cfg Config) *Service {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SweepInterval <= 0 {
		cfg.SweepInterval = 250 * time.Millisecond
	}
	if cfg.MaxResources <= 0 {
		cfg.MaxResources = DefaultMaxResources
	}
	if cfg.MaxWaiters <= 0 {
		cfg.MaxWaiters = DefaultMaxWaiters
	}
	s := &Service{
		store:      store,
		clock:      cfg.Clock,
		issuer:     cfg.Issuer,
		log:        cfg.Logger,
		obs:        cfg.Observer,
		limits:     cfg,
		resources:  make(map[string]*known, len(resources)),
		held:       make(map[string]*known),
		delayed:    make(map[string]*known),
		permitQ:    make(map[string][]*waiter),
		multi:      make(map[string][]*waiter),
		alarmed:    make(map[string]*known),
		index:      newIndex(),
		alarmIndex: newIndex(),
		seq:        lastSeq,
		published:  lastSeq,
		metrics:    newCounters(),
		kick:       make(chan struct{}, 1),
		stop:       make(chan struct{}),
		closing:    make(chan struct{}),
		done:       make(chan struct{}),
		stopCommit: make(chan struct{}),
		commitDone: make(chan struct{}),
		queuedHook: cfg.Queued,
	}
	for _, r := range resources {
		st := newKnown(*r)
		s.resources[r.ResourceID] = st
		if r.Holder != "" {
			s.held[r.ResourceID] = st
		}
		if !r.AvailableAt.IsZero() {
			s.delayed[r.ResourceID] = st // a lock-delay survives a restart
		}
		s.index.ReplaceOrInsert(st)
		if r.CounterAlarm > 0 {
			s.alarmed[r.ResourceID] = st
			s.alarmIndex.ReplaceOrInsert(st)
			s.log.Warn("ALARM: token counter behind a recorded high-water mark; reset it deliberately",
				"resource", r.ResourceID, "mark", r.CounterAlarm, "lastToken", r.LastToken)
		}
	}
	s.settled.L = &s.mu
	s.hub.init(lastSeq, &s.metrics.streamDropped)
	s.signed = newSignedConfig(cfg)
	go s.sweepLoop(cfg.SweepInterval)
	go s.commitLoop()
	return s
}

// Issuer returns the issuer id.
func (s *Service) Issuer() string { return s.issuer }

// Closing is closed when Close begins: from then on the service refuses
// every change. Whoever holds on to the service past its end (an RPC
// connection of a cluster leader's term) learns of it here.
func (s *Service) Closing() <-chan struct{} { return s.closing }

// Close refuses new changes and every waiter, commits what is in flight,
// ends every subscription and stops the background loops.
func (s *Service) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.closing)
	for _, st := range s.resources {
		for _, w := range st.waiters {
			close(w.result)
		}
		st.waiters = nil
	}
	for name, q := range s.permitQ {
		for _, w := range q {
			close(w.result)
		}
		delete(s.permitQ, name)
	}
	closed := make(map[*waiter]bool)
	for id, q := range s.multi {
		for _, w := range q {
			if !closed[w] {
				close(w.result)
				closed[w] = true
			}
		}
		delete(s.multi, id)
	}
	s.waiting, s.waitingBy = 0, [kinds]int{}
	s.mu.Unlock()
	close(s.stop)
	<-s.done
	s.callers.Wait() // they may hand the committer more work
	close(s.stopCommit)
	<-s.commitDone
	s.delivering.Wait()
	s.hub.close()
}

var (
	errClosed      = fenceview.Errorf(fenceview.EUNAVAILABLE, "the server is shutting down")
	errUnavailable = fenceview.Errorf(fenceview.EUNAVAILABLE, "could not record the change durably; nothing was changed")
)

// acquire is Acquire before signing.
func (s *Service) acquire(ctx context.Context, req fenceview.AcquireRequest) (fenceview.Grant, error) {
	decide, err := acquireDecision(ctx, req)
	if err != nil {
		return fenceview.Grant{}, err
	}
	r, err := s.change(ctx, decide)
	return r.granted(), err
}

// acquireDecision validates req and returns its decision under s.mu.
func acquireDecision(ctx context.Context, req fenceview.AcquireRequest) (func(*batch) outcome, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	g := grantReq{holder: req.Holder, owner: ownerOf(ctx), leaseMs: req.Lease.Milliseconds(), delayMs: req.LockDelay.Milliseconds(), shared: req.Shared}
	return func(b *batch) outcome { return b.acquireLock(req.ResourceID, req.Lease, req.Wait, g) }, nil
}

// acquireLock decides, under s.mu, an acquire of the lock id by g for
// lease (0: the current lease's length for its holder, else the default):
// a grant now (to a newcomer when the lock is vacant, or again to its
// holder), a refusal, or a waiter queued on the lock.
func (b *batch) acquireLock(id string, lease, wait time.Duration, g grantReq) outcome {
	if err := b.admit(id); err != nil {
		return refused(err)
	}
	w := b.get(id)
	b.expireIfDue(w)
	if g.shared {
		return b.acquireShared(w, lease, wait, g)
	}
	if sharedHeld(&w.res) && readerIndex(&w.res, g.holder, g.owner) >= 0 {
		return refusedAfter(upgradeError(&w.res, false)) // no upgrade: it holds the lock shared
	}
	if (w.res.Holder == g.holder && w.res.OwnerKey == g.owner && !sharedHeld(&w.res)) || b.vacant(w) {
		if w.res.Holder != g.holder {
			if err := ValidateNewID(g.holder); err != nil {
				return refused(err)
			}
		}
		if lease == 0 && w.res.Holder == g.holder && w.res.LeaseMs > 0 {
			g.leaseMs = w.res.LeaseMs // re-entrant: the current lease's length, as renew keeps it
		} else if lease == 0 {
			g.leaseMs = fenceview.DefaultLease.Milliseconds()
		}
		return b.grantNow(w, g)
	}
	if lease == 0 {
		g.leaseMs = fenceview.DefaultLease.Milliseconds()
	}
	// Giving up (timed out, or the caller went away), the waiter is told
	// the lock is still held by someone else, or in its delay.
	return b.queueOn(w, b.mayWait(wait, g, busyError(&w.res, b.now)), busyError)
}

// renew is Renew before signing.
func (s *Service) renew(ctx context.Context, resourceID, holder string, lease time.Duration) (fenceview.Grant, error) {
	decide, err := renewDecision(ctx, resourceID, holder, lease)
	if err != nil {
		return fenceview.Grant{}, err
	}
	r, err := s.change(ctx, decide)
	return r.granted(), err
}

// renewDecision validates a renewal and returns its decision under s.mu.
func renewDecision(ctx context.Context, resourceID, holder string, lease time.Duration) (func(*batch) outcome, error) {
	if err := (fenceview.AcquireRequest{ResourceID: resourceID, Holder: holder, Lease: lease}).Validate(); err != nil {
		return nil, err // a renewal is checked as an acquire of its lease; 0 is the current one
	}
	owner := ownerOf(ctx)
	return func(b *batch) outcome { return b.renew(resourceID, holder, owner, lease) }, nil
}

// renew decides, under s.mu, a renewal of holder's lease on id: the grant
// with its new expiry, or a refusal once expiries recorded are durable.
func (b *batch) renew(id, holder, owner string, lease time.Duration) outcome {
	w := b.get(id)
	b.expireIfDue(w)
	if sharedHeld(&w.res) {
		return b.renewShared(w, holder, owner, lease)
	}
	if w.res.Holder != holder || w.res.OwnerKey != owner {
		return refusedAfter(notHolderError(&w.res, holder, owner))
	}
	leaseMs := w.res.LeaseMs
	if lease > 0 {
		leaseMs = lease.Milliseconds()
	}
	w.res.LeaseMs = leaseMs
	w.res.ExpiresAt = b.now.Add(time.Duration(leaseMs) * time.Millisecond)
	b.event(fenceview.Event{Type: fenceview.EventRenew, ResourceID: id, Token: w.res.Token, Holder: holder})
	b.renewals++
	g := b.s.grantOf(&w.res)
	return outcome{commit: true, presign: true, answer: waitResult{grant: &g}}
}

// Release gives up one hold of holder on resourceID and returns the holds
// left; at zero the lock is free and the first waiter gets it.
func (s *Service) Release(ctx context.Context, resourceID, holder string) (int, error) {
	rel, err := releaseDecision(ctx, resourceID, holder)
	if err != nil {
		return 0, err
	}
	if _, err := s.change(ctx, rel.decide); err != nil {
		return 0, err
	}
	return rel.left, nil
}

// releasing is a release being decided: the holds it leaves, once decide
// has run under s.mu.
type releasing struct {
	resourceID, holder, owner string
	left                      int
}

// releaseDecision validates a release.
func releaseDecision(ctx context.Context, resourceID, holder string) (*releasing, error) {
	if err := fenceview.ValidateLock(resourceID, holder); err != nil {
		return nil, err
	}
	return &releasing{resourceID: resourceID, holder: holder, owner: ownerOf(ctx)}, nil
}

func (rel *releasing) decide(b *batch) outcome {
	w := b.get(rel.resourceID)
	b.expireIfDue(w)
	if sharedHeld(&w.res) {
		left, err := b.releaseShared(w, rel.holder, rel.owner)
		if err != nil {
			return refusedAfter(err)
		}
		rel.left = left
		return committed()
	}
	if w.res.Holder != rel.holder || w.res.OwnerKey != rel.owner {
		return refusedAfter(notHolderError(&w.res, rel.holder, rel.owner))
	}
	rel.left = b.release(w)
	return committed()
}

// ForceExpire frees the lock on resourceID whatever its state (an admin's
// forced unlock). The first waiter, if any, gets it.
func (s *Service) ForceExpire(ctx context.Context, resourceID string) error {
	if err := guard.ValidateResourceID(resourceID); err != nil {
		return invalid(err)
	}
	_, err := s.change(ctx, func(b *batch) outcome {
		if _, ok := s.resources[resourceID]; !ok {
			return refused(nil) // nothing to expire; don't create a record for it
		}
		b.forceExpire(b.get(resourceID))
		return committed()
	})
	return err
}

// forceExpire frees w whatever its state, ending a lock-delay too, and
// serves its first waiter.
func (b *batch) forceExpire(w *state) {
	if w.res.Holder != "" {
		b.expire(w, fenceview.ExpireForced)
	} else if b.delayed(w) {
		// Forced during a lock-delay: the delay ends now.
		w.res.AvailableAt = time.Time{}
		b.event(fenceview.Event{Type: fenceview.EventExpire, ResourceID: w.res.ResourceID, Token: w.res.LastToken, Reason: fenceview.ExpireForced})
		b.expiries++
		b.handOff(w)
	}
}

// ResetCounter raises the token counter of resourceID to at least floor, so
// every later grant is above it, and clears a counter alarm: the deliberate
// answer to a counter found behind the tokens in use. Tokens never go down,
// so a floor below the counter only clears the alarm. An unknown resource is
// created, which lets an operator start tokens above those of a previous
// lock service.
func (s *Service) ResetCounter(ctx context.Context, resourceID string, floor int64) (fenceview.Resource, error) {
	if err := guard.ValidateResourceID(resourceID); err != nil {
		return fenceview.Resource{}, invalid(err)
	}
	if floor <= 0 || floor >= fenceview.MaxIssued {
		return fenceview.Resource{}, fenceview.Errorf(fenceview.EINVALID, "floor must be an integer from 1 to %d", fenceview.MaxIssued-1)
	}
	var view fenceview.Resource
	_, err := s.change(ctx, func(b *batch) outcome {
		if err := b.admit(resourceID); err != nil {
			return refused(err)
		}
		w := b.get(resourceID)
		w.res.LastToken = max(w.res.LastToken, floor)
		w.res.CounterAlarm = 0
		b.event(fenceview.Event{Type: fenceview.EventReset, ResourceID: resourceID, Token: w.res.LastToken, Required: floor, Source: "admin"})
		b.resets++
		view = s.view(w)
		return committed()
	})
	if err != nil {
		return fenceview.Resource{}, err
	}
	s.log.Info("token counter reset", "resource", resourceID, "floor", floor, "lastToken", view.LastToken)
	return view, nil
}

// Fence presents a token to the server's own guard for resourceID and records
// the decision. Tokens of another issuer or scope are refused unread; for a
// resource this server issues tokens for, a token above the last one issued
// is refused as unissued.
func (s *Service) Fence(ctx context.Context, f fenceview.Fence) (guard.Decision, error) {
	fc, err := s.fenceDecisionOf(f)
	if err != nil {
		return guard.Decision{}, err
	}
	if _, err := s.change(ctx, fc.decide); err != nil {
		return guard.Decision{}, err
	}
	return fc.d, nil
}

// fencing is a fenced write being decided: its decision, once decide has
// run under s.mu.
type fencing struct {
	s                *Service
	f                fenceview.Fence
	mode             string
	read             bool // a read: a shared grant's token will do
	verified, proven bool
	sharedSig        bool // the signature proves a shared grant's token
	d                guard.Decision
}

// fenceDecisionOf validates f and checks its signature, outside s.mu.
func (s *Service) fenceDecisionOf(f fenceview.Fence) (*fencing, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	mode, _ := fenceview.ParseFenceMode(f.Mode) // valid: Validate parsed it
	access, _ := fenceview.ParseAccess(f.Access)
	fc := &fencing{s: s, f: f, mode: mode, read: access == fenceview.AccessRead}
	fc.verified, fc.sharedSig = s.fenceVerified(f, fc.read) // Ed25519 before the lock, not under it
	// A token above the foreign cap proves itself issued here by its
	// signature alone (as a report's does), checked here, outside the lock.
	fc.proven = f.Token.Token > fenceview.MaxReportedMark && f.Token.Signature != "" && s.verify(f.ResourceID, f.Token.Token, f.Token.Signature)
	if f.Holder != "" {
		if err := ValidateNewID(f.Holder); err != nil {
			return nil, err
		}
	}
	return fc, nil
}

func (fc *fencing) decide(b *batch) outcome {
	f := &fc.f
	if err := b.admit(f.ResourceID); err != nil {
		return refused(err)
	}
	w := b.get(f.ResourceID)
	if err := overForeignCap(&w.res, f.Token.Token, fc.proven); err != nil {
		return refused(err)
	}
	b.expireIfDue(w)
	fc.d = fc.s.fenceDecision(&w.res, *f, fc.mode, fc.read, fc.verified, fc.sharedSig)
	b.decide(w, fc.d, f.Holder, f.Source, b.now, false, false, fc.read)
	return committed()
}

// overForeignCap refuses a fence of token on r that would set r's mark
// above fenceview.MaxReportedMark while this server never issued a token
// for r: one fence of 2^63-1 would otherwise leave it, or a semaphore's
// slot, unable to grant until an admin's recovery. It is the rule reports
// follow (decide), but a fence is answered, not recorded as a guard's
// claim, so it is refused and changes nothing. proven: the token carries
// this issuer's signature, so it was issued here.
func overForeignCap(r *fenceview.Resource, token int64, proven bool) error {
	if !aboveForeignCap(r, token, proven) {
		return nil
	}
	return &fenceview.Error{Code: fenceview.EINVALID,
		Message: fmt.Sprintf("token %d is above %d (2^62), the highest a resource this server never issued a token for accepts; present a lower token, or acquire the lock first",
			token, int64(fenceview.MaxReportedMark)),
		Fields: map[string]any{"maxToken": int64(fenceview.MaxReportedMark)}}
}

// aboveForeignCap is the one rule of fences and reports: a mark above
// fenceview.MaxReportedMark on a resource this server never issued a
// token for, unless vouched for by this issuer's signature, is more than
// anything from elsewhere may set (2^62 grants must remain above it).
func aboveForeignCap(r *fenceview.Resource, mark int64, vouched bool) bool {
	return r.LastToken == 0 && !vouched && mark > fenceview.MaxReportedMark
}

// fenceDecision is the server's own guard: f's token against r, in mode,
// for a read or a write, verified saying whether its signature may be
// trusted and sharedSig whether it proves a shared grant's token. A read
// and a write meet the same rule; a write may not use a read phase's
// token, which the signature proves or, unsigned, the record knows.
func (s *Service) fenceDecision(r *fenceview.Resource, f fenceview.Fence, mode string, read, verified, sharedSig bool) guard.Decision {
	token := f.Token.Token
	if reason := f.Token.Mismatch(s.issuer, f.ResourceID); reason != "" {
		return guard.Decision{Reason: reason, Presented: token, Required: r.HighWaterMark}
	}
	switch {
	case !verified:
		return guard.Decision{Reason: guard.ReasonBadSignature, Presented: token, Required: r.HighWaterMark}
	case !read && (sharedSig || sharedToken(r, token)):
		return guard.Decision{Reason: guard.ReasonSharedToken, Presented: token, Required: r.HighWaterMark}
	case r.LastToken > 0 && token > r.LastToken:
		return guard.Decision{Reason: guard.ReasonUnissued, Presented: token, Required: r.HighWaterMark}
	case mode == fenceview.FenceModeCurrent && token < r.LastToken:
		return guard.Decision{Reason: guard.ReasonSuperseded, Presented: token, Required: r.LastToken}
	}
	return guard.Evaluate(r.HighWaterMark, token)
}

// Report records decisions made by guards elsewhere (plugins). The whole
// batch is validated first: one bad report refuses the batch, recording
// nothing. An accepted token, or a refusal's required token, raises the
// resource's high-water mark as known to the server.
func (s *Service) Report(ctx context.Context, reports []fenceview.Report) (int, error) {
	now := s.clock.Now()
	for i, r := range reports {
		if err := validateReport(r, now); err != nil {
			return 0, fenceview.Errorf(fenceview.EINVALID, "decisions[%d]: %s", i, fenceview.ErrorMessage(err))
		}
	}
	reports = s.verifyReports(reports)
	if _, err := s.change(ctx, func(b *batch) outcome { return b.report(reports) }); err != nil {
		return 0, err
	}
	return len(reports), nil
}

// report records reports, validated, under s.mu: all of them, or none when
// one names a resource that cannot be created.
func (b *batch) report(reports []fenceview.Report) outcome {
	for i, r := range reports {
		if err := b.admit(r.ResourceID); err != nil {
			return refused(&fenceview.Error{Code: fenceview.ErrorCode(err), Message: fmt.Sprintf("decisions[%d]: %s", i, fenceview.ErrorMessage(err))})
		}
	}
	for _, r := range reports {
		w := b.get(r.ResourceID)
		d := guard.Decision{Accepted: r.Accepted, Reason: r.Reason, Presented: r.Token, Required: r.Required}
		if d.Accepted {
			d.Reason = ""
		} else if d.Reason == "" {
			d.Reason = guard.ReasonStale
		}
		at := r.At
		if at.IsZero() {
			at = b.now
		}
		b.decide(w, d, "", r.Source, at, r.Proven, true, r.Access == fenceview.AccessRead)
	}
	return committed()
}

// Lock returns the state of the lock on resourceID. A lease that has run out
// reads as free even before the sweep records its expiry.
func (s *Service) Lock(resourceID string) (fenceview.LockState, error) {
	if err := guard.ValidateResourceID(resourceID); err != nil {
		return fenceview.LockState{}, invalid(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	ls := fenceview.LockState{ResourceID: resourceID}
	st := s.resources[resourceID]
	if st == nil || st.read() == nil {
		return ls, nil
	}
	r := st.read()
	ls.LastToken = r.LastToken
	ls.Waiters = len(st.waiters)
	if r.AvailableAt.After(now) {
		ls.AvailableAt = r.AvailableAt
	}
	if sharedHeld(r) {
		// Each reader's own lease: the lock is held while any is live.
		if ls.Holders = holdStates(r, now); len(ls.Holders) > 0 {
			first := ls.Holders[0]
			ls.Locked, ls.Shared = true, true
			ls.Holder, ls.HoldCount = first.Holder, first.HoldCount
			ls.ExpiresAt, ls.Remaining = first.ExpiresAt, first.Remaining
			ls.LeaseMs = r.LeaseMs
		}
		return ls, nil
	}
	if r.Holder != "" && r.ExpiresAt.After(now) {
		ls.Locked = true
		ls.Holder = r.Holder
		ls.HoldCount = r.HoldCount
		ls.ExpiresAt = r.ExpiresAt
		ls.Remaining = r.ExpiresAt.Sub(now)
		ls.LeaseMs = r.LeaseMs
	}
	return ls, nil
}

// Resource returns what the server knows about resourceID.
func (s *Service) Resource(resourceID string) (fenceview.Resource, error) {
	if err := guard.ValidateResourceID(resourceID); err != nil {
		return fenceview.Resource{}, invalid(err)
	}
	s.mu.Lock()
	st := s.resources[resourceID]
	s.mu.Unlock()
	if st == nil || st.read() == nil {
		return fenceview.Resource{}, fenceview.Errorf(fenceview.ENOTFOUND, "no resource %q", resourceID)
	}
	return viewAt(st.read(), s.clock.Now()), nil
}

// Resources returns every known resource, ordered by id. With many
// resources, page them instead (ListResources).
func (s *Service) Resources() []fenceview.Resource {
	index, _ := s.snapshot()
	now := s.clock.Now()
	out := make([]fenceview.Resource, 0, index.Len())
	index.Ascend(func(k *known) bool {
		if r := k.read(); r != nil {
			out = append(out, viewAt(r, now))
		}
		return true
	})
	return out
}

// ListResources returns up to limit resources whose ids start with prefix,
// sort after the id after ("" for the first page) and that scope sees,
// ordered by id, and whether more follow. It reads a snapshot, outside
// the service's lock, and walks only the ranges of the index that prefix
// and scope's prefixes allow: a page costs about a page, however many
// resources there are, and a key limited to some prefixes pays for its
// own resources only.
func (s *Service) ListResources(prefix, after string, limit int, scope fenceview.Scope) (page []fenceview.Resource, more bool) {
	limit = max(limit, 1)
	page = make([]fenceview.Resource, 0, min(limit, 128))
	index, _ := s.snapshot()
	now := s.clock.Now()
	walk(index, scope.Ranges(prefix), after, func(k *known) bool {
		if k.id == after || !scope.Contains(k.id) || k.read() == nil {
			return true
		}
		if len(page) == limit {
			more = true
			return false
		}
		page = append(page, viewAt(k.read(), now))
		return true
	})
	return page, more
}

// Totals sums every resource scope sees: how many, how many held now, and
// the fenced writes they accepted and refused. It counts a snapshot,
// outside the service's lock, within scope's prefixes only.
func (s *Service) Totals(scope fenceview.Scope) (resources, held int, accepted, rejected int64) {
	index, _ := s.snapshot()
	now := s.clock.Now()
	walk(index, scope.Ranges(""), "", func(k *known) bool {
		r := k.read()
		if !scope.Contains(k.id) || r == nil {
			return true
		}
		resources++
		accepted += r.Accepted
		rejected += r.Rejected
		if heldAt(r, now) {
			held++
		}
		return true
	})
	return resources, held, accepted, rejected
}

// Alarmed returns up to limit resources whose counter alarm is raised,
// ordered by id, and how many there are, from a snapshot.
func (s *Service) Alarmed(limit int, scope fenceview.Scope) ([]fenceview.Resource, int) {
	_, alarmed := s.snapshot()
	now := s.clock.Now()
	var out []fenceview.Resource
	n := 0
	walk(alarmed, scope.Ranges(""), "", func(k *known) bool {
		if r := k.read(); r != nil && scope.Contains(k.id) {
			if n < limit {
				out = append(out, viewAt(r, now))
			}
			n++
		}
		return true
	})
	return out, n
}

// view is a working copy as readers see it (viewAt).
func (s *Service) view(st *state) fenceview.Resource { return viewAt(&st.res, s.clock.Now()) }

// LastSeq returns the sequence number of the last durable event: every
// event up to it is committed and published. Numbers already given to
// changes still being committed are above it.
func (s *Service) LastSeq() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.published
}

func (s *Service) grantOf(r *fenceview.Resource) fenceview.Grant {
	return fenceview.Grant{
		ResourceID: r.ResourceID,
		Holder:     r.Holder,
		HoldCount:  r.HoldCount,
		ExpiresAt:  r.ExpiresAt,
		LeaseMs:    r.LeaseMs,
		Fencing: guard.Token{
			Token:    r.Token,
			Issuer:   s.issuer,
			Scope:    guard.Scope(r.ResourceID),
			IssuedAt: r.GrantedAt,
		},
	}
}

// busyError says why r cannot be granted now: held, or in its lock-delay.
func busyError(r *fenceview.Resource, now time.Time) error {
	if r.Holder == "" && r.AvailableAt.After(now) {
		return &fenceview.Error{
			Code:    fenceview.ELOCKDELAY,
			Message: "lock delay",
			Fields:  map[string]any{"availableAt": r.AvailableAt},
		}
	}
	return heldError(r)
}

func heldError(r *fenceview.Resource) error {
	return &fenceview.Error{
		Code:    fenceview.ELOCKHELD,
		Message: "lock held",
		Fields:  map[string]any{"holder": r.Holder, "expiresAt": r.ExpiresAt},
	}
}

func invalid(err error) error {
	return fenceview.Errorf(fenceview.EINVALID, "%s", err.Error())
}

func validateReport(r fenceview.Report, now time.Time) error {
	if err := r.Validate(); err != nil {
		return err
	}
	if !r.At.IsZero() {
		return checkAt(r.At, now)
	}
	return nil
}

// sweepLoop records the expiry of leases that ran out, so an expire event
// appears (and a waiter is served) even when nobody touches the lock.
func (s *Service) sweepLoop(interval time.Duration) {
	defer close(s.done)
	for {
		t := s.clock.NewTimer(interval)
		select {
		case <-s.stop:
			t.Stop()
			return
		case <-t.C():
		}
		s.Sweep(context.Background())
	}
}

// Sweep expires every lease that has run out, now.
func (s *Service) Sweep(ctx context.Context) {
	_, err := s.change(ctx, func(b *batch) outcome {
		b.sweep()
		return committed()
	})
	if err != nil && err != errClosed {
		s.log.Error("recording lease expiries", "err", err)
	}
}

// sweep records the expiry of every lease that ran out and hands on every
// lock whose delay is over.
func (b *batch) sweep() {
	s := b.s
	for id, st := range s.held {
		if !st.res.Load().ExpiresAt.After(b.now) {
			b.expireIfDue(b.get(id))
		}
	}
	for id, st := range s.delayed {
		if !st.res.Load().AvailableAt.After(b.now) {
			// The delay is over: the waiters' turn. Clearing it needs no
			// record of its own; a past delay reads as none.
			w := b.get(id)
			w.res.AvailableAt = time.Time{}
			b.handOff(w)
		}
	}
}

// nextToken is the token the next grant takes (fenceview.NextToken), or
// the conflict that says the resource's tokens are exhausted.
func nextToken(r *fenceview.Resource) (int64, error) {
	next := fenceview.NextToken(*r)
	if next == 0 {
		return 0, &fenceview.Error{Code: fenceview.EEXHAUSTED,
			Message: fmt.Sprintf("tokens for %q are exhausted (last token %d, high-water mark %d); an admin can bring it back with POST /v1/locks/{resource}/recover",
				r.ResourceID, r.LastToken, r.HighWaterMark),
			Fields: map[string]any{"lastToken": r.LastToken, "highWaterMark": r.HighWaterMark}}
	}
	return next, nil
}
