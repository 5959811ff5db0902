package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/wire"
	"github.com/fenceview/fenceview/internal/wire/op"
)

// maxElectionValue bounds a leader's value (fenceview.MaxElectionValue).
const maxElectionValue = 4 << 10

// Election is a leader election in the shape of etcd's
// concurrency.Election, where the term is a fencing token: the election
// name is a lock on the server, its leader is the lock's holder and the
// term is the lock's token. A leader passes its term to every write, and
// every guard refuses the writes of a deposed leader, which no election
// without tokens can do.
//
// The candidate is the client's holder id (Config.Holder). One Election
// campaigns for one candidate; its methods are safe for concurrent use.
type Election struct {
	c         *Client
	name      string
	candidate string

	mu      sync.Mutex
	h       *hold // the current or last leadership; nil before the first
	leader  Leader
	fencing guard.Token
}

// Leader is an election's leader, the domain's: Term is the election
// lock's token. ExpiresAt is zero in the changes Observe sends, and the
// zero Leader (IsZero) is no leader: Observe sends it when the leader
// resigned or its lease ran out.
type Leader = fenceview.Leader

func leaderOf(b wire.Leader) Leader {
	return Leader{Candidate: b.Candidate, Value: b.Value, Term: b.Term, Since: time.Time(b.Since), ExpiresAt: time.Time(b.ExpiresAt)}
}

// Election returns the election name (a resource id: 1..160 bytes).
func (c *Client) Election(name string) *Election {
	return &Election{c: c, name: name, candidate: c.holder}
}

// Name returns the election's name.
func (e *Election) Name() string { return e.name }

// Candidate returns the candidate id this Election campaigns for.
func (e *Election) Candidate() string { return e.candidate }

func (e *Election) validate() error {
	if err := guard.ValidateResourceID(e.name); err != nil {
		return invalid("name", fmt.Errorf("election name: %w", err))
	}
	return guardHolder(e.candidate)
}

func validateValue(value string) error {
	if len(value) > maxElectionValue {
		return invalid("value", fmt.Errorf("value of %d bytes: want at most %d", len(value), maxElectionValue))
	}
	return nil
}

// Campaign blocks until this candidate is elected or ctx is done, and
// returns the term. Candidates are served first come first served, in the
// lock's wait queue. Once elected, a watchdog renews the leadership's
// lease (Config.Lease) until Resign; Context is cancelled when it is lost.
// Campaigning again while leading keeps the term and sets the value.
func (e *Election) Campaign(ctx context.Context, value string) (int64, error) {
	bad := cmp.Or(e.validate(), validateValue(value))
	return inChunks(ctx, bad, func(ctx context.Context, wait time.Duration) (int64, error) { return e.campaign(ctx, value, wait) }, ErrHeld)
}

func (e *Election) campaign(ctx context.Context, value string, wait time.Duration) (int64, error) {
	in := wire.Request{Candidate: &e.candidate, Value: &value, LeaseMs: wire.IntSet(e.c.lease.Milliseconds()), WaitMs: wire.IntOf(wait.Milliseconds())}
	var out wire.Elected
	sent := e.c.clock.Now()
	err := e.c.exchange(ctx, &op.Campaign, e.name, in, &out, refusal{resource: e.name})
	if err != nil {
		return 0, err
	}
	if out.Leader.Candidate != e.candidate || out.Leader.Term <= 0 || out.Fencing.Token != out.Leader.Term {
		return 0, fmt.Errorf("fenceview: election %q: campaign answered no leadership of %q", e.name, e.candidate)
	}
	lease := e.c.lease // an election's answer carries no lease: the one asked
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.h == nil || e.h.ctx.Err() != nil || e.leader.Term != out.Leader.Term {
		if e.h != nil && e.h.ctx.Err() == nil {
			// A new term while the old one looked live: it was lost.
			e.h.cancel(fmt.Errorf("%w: term %d ended", ErrLeaseLost, e.leader.Term))
		}
		e.h = e.c.newHold(&e.mu, lease, true, sent, e.renewOnce, nil)
	}
	e.leader, e.fencing = leaderOf(out.Leader), out.Fencing.GuardToken()
	return out.Leader.Term, nil
}

// leading returns the live leadership, nil when this candidate does not
// lead as far as the client knows.
func (e *Election) leading() *hold {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.h == nil || e.h.ctx.Err() != nil {
		return nil
	}
	return e.h
}

// lost reports whether this candidate's last leadership ended other than
// by its Resign: lost with its lease, or ended by Close.
func (e *Election) lost() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.h != nil && e.h.ctx.Err() != nil && !errors.Is(context.Cause(e.h.ctx), ErrResigned)
}

func (e *Election) renewOnce(ctx context.Context) (time.Duration, error) {
	in := wire.Request{Candidate: &e.candidate, LeaseMs: wire.IntSet(e.c.lease.Milliseconds())}
	var out wire.Elected
	err := e.c.exchange(ctx, &op.ElectionRenew, e.name, in, &out, refusal{resource: e.name, conflict: "not-leader"})
	return 0, err // the lease asked: the answer carries none
}

// Proclaim sets the leader's value, same term, without another election
// (etcd's Proclaim). A candidate that does not lead gets an error matching
// ErrNotLeader; when the server says so of a leadership the client
// thought live, its Context is cancelled with ErrLeaseLost.
func (e *Election) Proclaim(ctx context.Context, value string) error {
	if err := e.validate(); err != nil {
		return err
	}
	if err := validateValue(value); err != nil {
		return err
	}
	h := e.leading()
	if h == nil {
		return fmt.Errorf("%w: %q does not lead election %q", ErrNotLeader, e.candidate, e.name)
	}
	in := wire.Request{Candidate: &e.candidate, Value: &value}
	err := e.c.exchange(ctx, &op.Proclaim, e.name, in, nil, refusal{resource: e.name, conflict: "not-leader"})
	if errors.Is(err, ErrNotLeader) {
		h.lose(fmt.Errorf("%w: %w", ErrLeaseLost, err))
	}
	if err != nil {
		return err
	}
	e.mu.Lock()
	if e.h == h {
		e.leader.Value = value
	}
	e.mu.Unlock()
	return nil
}

// Resign gives up the leadership: the watchdog stops and Context is
// cancelled with ErrResigned. Another candidate can then be elected, with
// a larger term.
//
// As a second Unlock is refused (ErrNotHeld), so is a second Resign, and
// a Resign of a leadership never won: the server's 409 not-leader
// (ErrNotLeader). A leadership lost while held (its Context already
// cancelled with ErrLeaseLost) has nothing left to give up: Resign returns
// nil, as the Java and JavaScript clients do.
func (e *Election) Resign(ctx context.Context) error {
	if err := e.validate(); err != nil {
		return err
	}
	h := e.leading()
	if h == nil && e.lost() {
		return nil
	}
	in := wire.Request{Candidate: &e.candidate}
	err := e.c.exchange(ctx, &op.Resign, e.name, in, nil, refusal{resource: e.name, conflict: "not-leader"})
	if h == nil {
		return err
	}
	switch {
	case err == nil:
		h.end(ErrResigned)
	case errors.Is(err, ErrNotLeader) || lostLease(err):
		h.end(fmt.Errorf("%w: %w", ErrLeaseLost, err))
	}
	return err
}

// Leader returns the election's current leader (GET /v1/elections/{name}),
// or an error matching ErrNoLeader when nobody leads.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	if err := guard.ValidateResourceID(e.name); err != nil {
		return Leader{}, invalid("name", err)
	}
	var out wire.Election
	if err := e.c.exchange(ctx, &op.Election, e.name, wire.Request{}, &out, refusal{resource: e.name}); err != nil {
		return Leader{}, err
	}
	if out.Leader == nil || out.Leader.Term <= 0 {
		return Leader{}, fmt.Errorf("%w: election %q", ErrNoLeader, e.name)
	}
	return leaderOf(*out.Leader), nil
}

// Context returns a context cancelled when this candidate's leadership
// ends: with cause ErrLeaseLost when its lease was lost, ErrResigned after
// Resign, ErrClosed at the client's Close. Before the first election it
// is already cancelled.
func (e *Election) Context() context.Context { return contextOf(&e.mu, &e.h) }

// Done is Context().Done().
func (e *Election) Done() <-chan struct{} { return e.Context().Done() }

// Term returns the term of this candidate's current or last leadership (0
// before the first), like etcd's Rev: the fencing token its writes carry.
func (e *Election) Term() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leader.Term
}

// Token returns the term as a token with its signature, for guards; it
// stays the last term's after the leadership ends, since a paused leader
// writes with what it has.
func (e *Election) Token() Token {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fencing.Token == 0 {
		return Token{}
	}
	return Token{Resource: e.name, Number: e.fencing.Token, Signature: e.fencing.Signature, KeyID: e.fencing.KeyID}
}

// Fencing returns the token envelope of the latest election.
func (e *Election) Fencing() guard.Token {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.fencing
}

// Observe returns a channel of the election's leader changes, in order,
// until ctx is done or the client closes (then the channel is closed), as
// etcd's Observe: first the leader at the time (the zero Leader when
// nobody leads), then a new Leader at every new term and every proclaimed
// value, and the zero Leader whenever the leader resigns or its lease runs
// out. It follows the event stream (/v1/events?resource=<name>) and, when
// the stream breaks, resumes it from the last event seen, so no change is
// skipped. Receive promptly: the stream waits for the receiver.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	ch := make(chan Leader)
	ctx, done, err := e.c.life.begin(ctx)
	if err != nil || guard.ValidateResourceID(e.name) != nil {
		close(ch)
		return ch
	}
	go func() {
		defer done()
		defer close(ch)
		o := observer{e: e, ctx: ctx, ch: ch}
		o.run()
	}()
	return ch
}

// observer is one Observe's state: the leader it last sent and the last
// event it read.
type observer struct {
	e    *Election
	ctx  context.Context
	ch   chan<- Leader
	cur  Leader
	sent bool
	seq  int64
}

func (o *observer) run() {
	backoff := 100 * time.Millisecond
	for o.ctx.Err() == nil {
		err := o.follow()
		if o.ctx.Err() != nil {
			return
		}
		if err == nil {
			backoff = 100 * time.Millisecond
		}
		t := o.e.c.clock.NewTimer(backoff)
		select {
		case <-o.ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// follow reads one connection of the stream until it breaks; nil when it
// had read something (the next attempt starts afresh).
func (o *observer) follow() error {
	q := "resource=" + url.QueryEscape(o.e.name)
	if o.seq > 0 {
		q += "&since=" + strconv.FormatInt(o.seq, 10)
	}
	ws, err := o.e.c.dialWS(o.ctx, "/v1/events", q)
	if err != nil {
		return err
	}
	defer ws.Close()
	// ctx ending closes the stream, which ends the read; the close is
	// waited for, so no goroutine of the observation outlives it.
	closed := make(chan struct{})
	stop := context.AfterFunc(o.ctx, func() { ws.Close(); close(closed) })
	defer func() {
		if !stop() {
			<-closed
		}
	}()
	// The server pings an idle stream about every minute: a stream silent
	// for longer is dead (a peer gone without a FIN), and is reopened.
	ws.SetReadLimit(1 << 20)
	ws.SetReadDeadline(time.Now().Add(streamIdle))
	ws.SetPingHandler(func(data string) error {
		ws.SetReadDeadline(time.Now().Add(streamIdle))
		// A pong that cannot be written shows up as a read error.
		ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(10*time.Second))
		return nil
	})
	if o.seq == 0 {
		// Subscribed first, then asked: a change after the answer comes
		// on the stream, and one before it is older than what it says.
		l, err := o.e.Leader(o.ctx)
		if err != nil && !errors.Is(err, ErrNoLeader) {
			return err
		}
		if !o.send(l) {
			return nil
		}
	}
	read := false
	for {
		var ev wire.Event
		if err := readEvent(ws, &ev); err != nil {
			if read {
				return nil
			}
			return err
		}
		read = true
		if ev.Seq > o.seq {
			o.seq = ev.Seq
		}
		if ev.ResourceID != o.e.name {
			continue
		}
		if next, ok := o.apply(ev); ok && !o.send(next) {
			return nil
		}
	}
}

// apply returns the leader after ev and whether it is a change. Events
// older than what the observer knows (its first answer may be newer than
// the first events of the stream) are no change.
func (o *observer) apply(ev wire.Event) (Leader, bool) {
	cur := o.cur
	var value string
	if ev.Value != nil {
		value = *ev.Value
	}
	switch ev.Type {
	case "grant":
		if ev.Token > cur.Term {
			return Leader{Candidate: ev.Holder, Value: value, Term: ev.Token, Since: time.Time(ev.At)}, true
		}
	case "proclaim":
		if ev.Token > cur.Term {
			return Leader{Candidate: ev.Holder, Value: value, Term: ev.Token, Since: time.Time(ev.At)}, true
		}
		if ev.Token == cur.Term && value != cur.Value {
			cur.Value = value
			return cur, true
		}
	case "release", "expire":
		if !cur.IsZero() && ev.Token >= cur.Term {
			return Leader{}, true
		}
	}
	return cur, false
}

// send hands l to the receiver unless it is what was sent last; false when
// ctx ended first.
func (o *observer) send(l Leader) bool {
	if o.sent && l.Term == o.cur.Term && l.Value == o.cur.Value && l.Candidate == o.cur.Candidate {
		return true
	}
	select {
	case o.ch <- l:
		o.cur, o.sent = l, true
		return true
	case <-o.ctx.Done():
		return false
	}
}

// streamIdle is how long an event stream may stay silent, pings
// included, before the observer reopens it.
const streamIdle = 2 * time.Minute

func readEvent(ws *websocket.Conn, ev *wire.Event) error {
	_, msg, err := ws.ReadMessage()
	if err != nil {
		return err
	}
	ws.SetReadDeadline(time.Now().Add(streamIdle))
	*ev = wire.Event{}
	return json.Unmarshal(msg, ev)
}
