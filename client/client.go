// Package client is the Go client of a fenceview server: distributed locks
// that hand out fencing tokens, in the shape of Redisson's RFencedLock and
// etcd's concurrency.Mutex.
//
//	c, err := client.New(client.Config{URL: "http://127.0.0.1:8080"})
//	m := c.Mutex("inventory:42", "worker-7")
//	token, err := m.Lock(ctx) // blocks; a watchdog keeps the lease alive
//	if err != nil { ... }
//	defer m.Unlock(context.Background())
//	// Work under m.Context(): it is cancelled the moment the lease is lost.
//	// Pass token to every write; the resource refuses stale ones.
//	d, err := inventory.Update(m.Context(), db, 42, token, sqlguard.Set("stock", 7))
//
// A lock alone cannot stop a holder that paused past its lease from
// writing: only the resource can, by refusing its token (see the guard
// packages). The watchdog and the lease-lost context make that rarer; the
// token makes it harmless.
//
// # Re-entrancy
//
// A holder may lock again while it holds the lock; the hold count goes up
// and Unlock must be called as many times. Every grant, re-entrant ones
// included, takes a new token, so a nested Lock returns a larger token
// than the outer one. Take the token once, at the outermost Lock, and pass
// it down to the code that writes; do not lock again to get "the" token.
//
// # More than one lock
//
// Each primitive (semaphore, multi-lock, election) is made of ordinary locks, so each is
// fenced as a lock is, with the same signed token envelopes:
//
//   - Semaphore: N permits are the locks name#0 .. name#<N-1>; a Permit's
//     Token is its slot's, and a guard fences the permit's work by the
//     slot's resource id and token.
//   - LockAll and MultiLock: several locks at once or none, a token each,
//     renewed by one watchdog.
//   - Election: a leader election in the shape of etcd's
//     concurrency.Election whose term is the election lock's token, so a
//     deposed leader's writes are refused.
//   - WithLockDelay: a lease that runs out without a release keeps the
//     lock from everyone for a while longer.
//
// Every handle has a Context that ends when its lease is lost. Semaphores
// and elections act as the client's holder id (Config.Holder).
//
// # Errors
//
// Every refusal of the server is an *APIError chosen by its refusal code
// (never by its English message), matching the code's sentinel with
// errors.Is (ErrLockHeld, ErrLeaseExpired, ErrStaleToken, ErrOverloaded,
// ...). Input the client refuses before sending anything (a holder over
// 80 bytes, a token below 1) is the *APIError the server would answer
// (400 invalid-request, or invalid-token, with Field), unwrapping to an
// *InputError. A call the server sheds (429 overloaded) is sent again after its
// Retry-After, with jitter, within the call's context deadline.
//
// All methods take a context and are safe for concurrent use. One Client
// shares one http.Client with keep-alive connections; make one per server.
// Close ends it for good: later calls fail with ErrClosed, the watchdogs
// stop, and locks still held are left to their leases (see Client.Close).
package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/clock"
	"github.com/fenceview/fenceview/internal/wire"
	"github.com/fenceview/fenceview/internal/wire/op"
)

// DefaultLease is the lease of Lock, renewed by the watchdog (the server's
// default too).
const DefaultLease = 30 * time.Second

// maxResponse bounds what is read of a response body.
const maxResponse = 1 << 20

// Client talks to one fenceview server. It is safe for concurrent use; its
// settings never change, and Close ends it for good.
type Client struct {
	life  *life
	base  *url.URL
	hc    *http.Client
	admin string
	key   string // sent with every call (Config.Key)
	clock Clock
	lease time.Duration
	rpc   *rpcPool // nil: every call is its own HTTP request
	// holder is the holder id of the client's semaphore permits and the
	// candidate id of its elections (Config.Holder).
	holder string
	nodes  *nodes // nil: one server
	sched  *scheduler

	hook func(event string) // tests: what the watchdogs of permits, multi-locks and elections do

	// How a shed call waits before it is sent again (see retrying);
	// tests replace them so that nothing sleeps.
	jitter func(d time.Duration) time.Duration
	sleep  func(ctx context.Context, d time.Duration) error
}

// Config is what New builds a Client from. Only URL is required; every
// other field's zero value is its default.
type Config struct {
	// URL is the server's base URL, e.g. "http://127.0.0.1:8080",
	// optionally with a path prefix.
	URL string

	// Peers are the base URLs of the other nodes of a fenceview cluster,
	// tried in turn when the current one cannot be reached: a call whose
	// connection could not be made (nothing was sent) is sent at once to
	// the next node, and after any other failure the next call starts
	// there. Every node answers every route alike, so they are
	// interchangeable; they must share URL's path prefix. The RPC stream
	// stays on URL.
	Peers []string

	// Key (an API key's secret, or the admin token) is sent as the
	// credential of every call, the RPC stream included. A server with
	// auth on answers calls without one with ErrUnauthorized.
	Key string

	// AdminToken is the bearer token of admin calls (ForceExpire,
	// Reset), and the credential of ordinary calls when Key is
	// empty.
	AdminToken string

	// Holder is the client's own holder id: the holder of the permits its
	// Semaphores acquire and the candidate of its Elections, as an etcd
	// Session's lease identifies its owner. Empty: "<hostname>-<pid>-<8
	// random hex digits>", unique per Client. 1..80 bytes, UTF-8 without
	// control characters. A Mutex and a multi-lock name their holder
	// themselves.
	Holder string

	// Lease is the lease Lock asks for and the watchdog renews, 1ms..24h.
	// Zero: DefaultLease. Shorter leases notice a dead holder sooner and
	// cost more renewals.
	Lease time.Duration

	// DisableRPC sends every call as its own HTTP request to the JSON API.
	// By default the operations the server's RPC stream (/v1/rpc) has go
	// over one websocket instead: a lock's acquire, renew, release and
	// state, fences, semaphores, multi-locks and elections (their state
	// included), and every watchdog renewal. Calls of every goroutine
	// share the connection and are batched into few messages, which costs
	// the server about a third of the CPU per call and lets many
	// concurrent callers on one host go several times faster. Answers,
	// errors, deadlines and Retry-After are the same as over HTTP. What
	// the stream does not have still uses HTTP: force-expire, reset,
	// reports, listings, keys and signing keys.
	//
	// The connection is dialed on first use and again after it breaks,
	// never after Close. A call in flight when it breaks fails with a
	// network error: like an HTTP request cut off, the server may or may
	// not have done it. When the websocket cannot be opened at all (a
	// proxy that refuses upgrades, a server without the stream, a node
	// that is down while its peers are up), calls go over the JSON API,
	// Logger is told once, and the stream is tried again after
	// RPCRetryAfter.
	//
	// An HTTPClient whose Transport is not an *http.Transport (a wrapper
	// adding headers or tracing) is used as given: the websocket cannot
	// go through it, so such a client uses the JSON API unless RPC is set.
	DisableRPC bool

	// RPC makes the client use the RPC stream even with an HTTPClient
	// whose Transport is not an *http.Transport (the websocket is then
	// dialed with the default TLS and proxy settings). The stream is the
	// default otherwise; see DisableRPC.
	RPC bool

	// RPCRetryAfter is how long calls go over the JSON API after the RPC
	// stream could not be opened, before it is tried again. Zero: 30s.
	RPCRetryAfter time.Duration

	// Logger is told what the client does on its own that a caller would
	// want to know: the RPC stream could not be opened and calls go over
	// the JSON API (once, until the stream opens again). Nil:
	// slog.Default().
	Logger *slog.Logger

	// HTTPClient sends the requests. Nil: the client's own, which keeps
	// connections alive (up to 32 idle per host). Do not give it a
	// Timeout shorter than the longest wait you pass to TryLock.
	HTTPClient *http.Client

	// Clock schedules the watchdog's renewals and measures leases. Nil:
	// the real clock. Tests pass a fake one so that no test sleeps.
	Clock Clock
}

// credential is the bearer secret of ordinary calls: the key, else the
// admin token (an admin credential too).
func (c *Client) credential() string {
	if c.key != "" {
		return c.key
	}
	return c.admin
}

// Holder returns the client's holder id (Config.Holder).
func (c *Client) Holder() string { return c.holder }

// defaultHolder is unique per Client: two clients in one process are two
// holders, as two processes are.
func defaultHolder() string {
	host, _ := os.Hostname()
	var r [4]byte
	rand.Read(r[:])
	id := fmt.Sprintf("%s-%d-%x", host, os.Getpid(), r)
	if guard.ValidateHolderID(id) != nil {
		id = fmt.Sprintf("pid%d-%x", os.Getpid(), r)
	}
	return id
}

// New returns a client of the server at cfg.URL, or the one error that
// says which setting of cfg is wrong (errors.Is ErrInvalid).
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(cfg.URL, "/"))
	if err != nil {
		return nil, invalid("url", fmt.Errorf("base URL: %w", err))
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, invalid("url", fmt.Errorf("base URL %q: want http(s)://host[:port][/prefix]", cfg.URL))
	}
	c := &Client{life: newLife(), base: u, hc: cfg.HTTPClient, admin: cfg.AdminToken, key: cfg.Key,
		clock: cfg.Clock, lease: cfg.Lease, holder: cfg.Holder}
	if c.clock == nil {
		c.clock = clock.Real{}
	}
	if c.lease == 0 {
		c.lease = DefaultLease
	}
	c.jitter, c.sleep = jitterOf, c.sleepOn
	c.sched = newScheduler(c)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RPCRetryAfter == 0 {
		cfg.RPCRetryAfter = defaultRPCRetry
	}
	if cfg.RPCRetryAfter < 0 {
		return nil, invalid("rpcRetryAfter", fmt.Errorf("RPCRetryAfter %v: want 0 (30s) or more", cfg.RPCRetryAfter))
	}
	if !cfg.DisableRPC && (cfg.RPC || streamable(cfg.HTTPClient)) {
		c.rpc = &rpcPool{retry: cfg.RPCRetryAfter, log: cfg.Logger}
	}
	if c.holder == "" {
		c.holder = defaultHolder()
	} else if err := guard.ValidateHolderID(c.holder); err != nil {
		return nil, invalid("holder", err)
	}
	if c.nodes, err = parseNodes(u, cfg.Peers); err != nil {
		return nil, err
	}
	if c.lease < time.Millisecond || c.lease > 24*time.Hour {
		return nil, invalid("leaseMs", fmt.Errorf("lease %v: want 1ms..24h", c.lease))
	}
	if c.hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		// Watchdogs of many mutexes renew on the same server: keep their
		// connections instead of reopening one per renewal.
		tr.MaxIdleConnsPerHost = 32
		c.hc = &http.Client{Transport: tr}
	}
	return c, nil
}

// specURL is the JSON API's URL of a call of o on name: its path with
// the name in the place of its {resource} or {name}. Resource ids may
// contain '/', spaces and any UTF-8: PathEscape keeps each one a single
// path segment.
func (c *Client) specURL(o *op.Spec, name string) *url.URL {
	target := o.Target()
	if target == "" {
		return c.path(o.Path)
	}
	before, after, _ := strings.Cut(o.Path, "{"+target+"}")
	return c.named(before, name, after)
}

// named is the URL of the path before + name + after, name one segment.
func (c *Client) named(before, name, after string) *url.URL {
	seg := url.PathEscape(name)
	if name == "." || name == ".." {
		// Dot segments would be resolved away by URL cleaning.
		seg = strings.ReplaceAll(name, ".", "%2E")
	}
	u := *c.base
	u.Path = c.base.Path + before + name + after
	u.RawPath = c.base.EscapedPath() + before + seg + after
	return &u
}

// getOne GETs o's route on resource into out, once resource is known to
// be a valid id.
func (c *Client) getOne(ctx context.Context, o *op.Spec, resource string, out any) error {
	if err := guard.ValidateResourceID(resource); err != nil {
		return invalid("resource", err)
	}
	return c.call(ctx, http.MethodGet, c.specURL(o, resource), nil, nil, out, refusal{resource: resource})
}

// path is base + p, for routes without a resource.
func (c *Client) path(p string) *url.URL {
	u := *c.base
	u.Path, u.RawPath = c.base.Path+p, ""
	return &u
}

// call sends a JSON request and decodes a 200 JSON response into out.
// Any other status becomes an *APIError read by r. A GET the server sheds
// is sent again (see retrying).
func (c *Client) call(ctx context.Context, method string, u *url.URL, header http.Header, in, out any, r refusal) error {
	return c.callLimit(ctx, maxResponse, method, u, header, in, out, r)
}

// callLimit is call reading at most limit bytes of the response.
func (c *Client) callLimit(ctx context.Context, limit int64, method string, u *url.URL, header http.Header, in, out any, r refusal) error {
	return c.retrying(ctx, method == http.MethodGet, func() error {
		return c.send(ctx, limit, method, u, header, in, out, r)
	})
}

// send is one HTTP request of call.
func (c *Client) send(ctx context.Context, limit int64, method string, u *url.URL, header http.Header, in, out any, r refusal) error {
	ctx, done, err := c.life.begin(ctx)
	if err != nil {
		return err
	}
	defer done()
	var b []byte
	if raw, ok := in.(json.RawMessage); ok { // already encoded (wire.AppendRequest)
		b = raw
	} else if in != nil {
		if b, err = json.Marshal(in); err != nil {
			return err
		}
	}
	var resp *http.Response
	for attempt := 0; ; attempt++ {
		var body io.Reader
		if in != nil {
			body = bytes.NewReader(b)
		}
		req, err := http.NewRequestWithContext(ctx, method, c.at(u).String(), body)
		if err != nil {
			return err
		}
		for k, v := range header {
			req.Header[k] = v
		}
		if in != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Accept", "application/json")
		if req.Header.Get("Authorization") == "" && c.credential() != "" {
			req.Header.Set("Authorization", "Bearer "+c.credential())
		}
		if resp, err = c.hc.Do(req); err == nil {
			break
		}
		if !c.failed(attempt, err) {
			return err
		}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	// Drain what is left so the connection goes back to the pool.
	io.Copy(io.Discard, resp.Body)
	if err != nil {
		return fmt.Errorf("fenceview: reading response: %w", err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		return r.decode(resp.StatusCode, raw, resp.Header)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("fenceview: decoding %s response: %w", u.Path, err)
		}
	}
	return nil
}

func (c *Client) acquire(ctx context.Context, resource, holder string, lease, wait, lockDelay time.Duration, shared bool) (wire.Grant, error) {
	var g wire.Grant
	err := c.exchange(ctx, &op.Acquire, resource,
		wire.Request{Holder: wire.StringOf(holder), LeaseMs: wire.IntOf(lease.Milliseconds()), WaitMs: wire.IntOf(wait.Milliseconds()),
			LockDelayMs: wire.IntOf(lockDelay.Milliseconds()), Shared: shared}, &g,
		refusal{resource: resource})
	return g, err
}

func (c *Client) renew(ctx context.Context, resource, holder string) (wire.Grant, error) {
	var g wire.Grant
	err := c.exchange(ctx, &op.Renew, resource, wire.Request{Holder: wire.StringOf(holder)}, &g, refusal{resource: resource, conflict: "not-held"})
	return g, err
}

func (c *Client) release(ctx context.Context, resource, holder string) (int, error) {
	var b wire.Released
	err := c.exchange(ctx, &op.Release, resource, wire.Request{Holder: wire.StringOf(holder)}, &b, refusal{resource: resource, conflict: "not-owner"})
	return b.HoldCount, err
}

// lostLease reports whether err is the server saying the holder does not
// hold the lock (any longer): its lease ran out or was force-expired,
// another holds it, or nobody does.
func lostLease(err error) bool {
	return errors.Is(err, ErrLeaseExpired) || errors.Is(err, ErrNotOwner) || errors.Is(err, ErrNotHeld)
}

// State is a lock as the server sees it (GET /v1/locks/{resource}).
type State struct {
	Resource  string
	Locked    bool
	Holder    string // "" when free
	HoldCount int
	// Token is the last token issued for the resource (0 if none), whether
	// or not the lock is held.
	Token     int64
	ExpiresAt time.Time // zero when free
	// Remaining is the lease left when the server answered.
	Remaining time.Duration
	Lease     time.Duration
	Waiters   int
	// Shared: the lock is held by readers (a read phase), each in
	// Holders; Holder, HoldCount and ExpiresAt are the first's, Token the
	// phase's.
	Shared  bool
	Holders []HoldState
}

// HoldState is one reader's hold of a lock held shared.
type HoldState struct {
	Holder    string
	HoldCount int
	ExpiresAt time.Time
	Remaining time.Duration
}

// State returns the state of the lock on resource.
func (c *Client) State(ctx context.Context, resource string) (State, error) {
	if err := guard.ValidateResourceID(resource); err != nil {
		return State{}, invalid("resource", err)
	}
	var b wire.Lock
	if err := c.exchange(ctx, &op.Lock, resource, wire.Request{}, &b, refusal{resource: resource}); err != nil {
		return State{}, err
	}
	st := State{Resource: b.ResourceID, Locked: b.Locked, Holder: string(b.Holder), HoldCount: b.HoldCount, Token: b.Token,
		ExpiresAt: time.Time(b.ExpiresAt), Remaining: time.Duration(b.RemainingMs) * time.Millisecond,
		Lease: time.Duration(b.LeaseMs) * time.Millisecond, Waiters: b.Waiters, Shared: b.Shared}
	for _, h := range b.Holders {
		st.Holders = append(st.Holders, HoldState{Holder: h.Holder, HoldCount: h.HoldCount, ExpiresAt: time.Time(h.ExpiresAt),
			Remaining: time.Duration(h.RemainingMs) * time.Millisecond})
	}
	return st, nil
}

// ForceExpire frees the lock on resource whoever holds it (Redisson's
// forceUnlock), with the admin token of Config.AdminToken. The holder's next
// renewal is refused and its Mutex context cancelled; its token stays
// valid at resources until a newer one is used there, which is why
// resources must check tokens.
func (c *Client) ForceExpire(ctx context.Context, resource string) error {
	if err := guard.ValidateResourceID(resource); err != nil {
		return invalid("resource", err)
	}
	h := http.Header{}
	if c.admin != "" {
		h.Set("Authorization", "Bearer "+c.admin)
	}
	return c.call(ctx, http.MethodPost, c.specURL(&op.Expire, resource), h, nil, nil, refusal{resource: resource})
}

// Fenced is a token the server's guard accepted.
type Fenced struct {
	Resource       string
	Token          int64
	IdempotencyKey string // "<resource>:<token>", for calls to unfenceable systems
}

// Fence presents token to the server's own guard for resource
// (POST /v1/fence/{resource}): accepted when token >= the resource's
// high-water mark, which it then becomes. A refusal is a *RefusalError
// carrying the required token; its Reason says why (stale-token,
// unissued-token, ...).
func (c *Client) Fence(ctx context.Context, resource string, token int64) (Fenced, error) {
	return c.FenceToken(ctx, resource, guard.Token{Token: token})
}

// FenceToken is Fence with the token's envelope: a token of another issuer
// or scope is refused (foreign-issuer, scope-mismatch) instead of compared.
func (c *Client) FenceToken(ctx context.Context, resource string, t guard.Token) (Fenced, error) {
	return c.fence(ctx, resource, t, "", "")
}

// FenceRead is FenceToken for a read: the server's guard applies the same
// rule (token >= mark, which it then becomes), and takes a read phase's
// token (RWMutex.RLock's), which a write may not use.
func (c *Client) FenceRead(ctx context.Context, resource string, t guard.Token) (Fenced, error) {
	return c.fence(ctx, resource, t, "", "read") // fenceview.AccessRead
}

// FenceCurrent is FenceToken in the fence's mode current: only the current
// holder may write. A token below the last one issued for resource is
// refused (a *RefusalError with Reason guard.ReasonSuperseded and Required
// the last token issued) even when it is not below the high-water mark,
// and the mark does not move.
func (c *Client) FenceCurrent(ctx context.Context, resource string, t guard.Token) (Fenced, error) {
	return c.fence(ctx, resource, t, "current", "") // fenceview.FenceModeCurrent
}

func (c *Client) fence(ctx context.Context, resource string, t guard.Token, mode, access string) (Fenced, error) {
	if err := guard.ValidateResourceID(resource); err != nil {
		return Fenced{}, invalid("resource", err)
	}
	if err := guard.ValidateToken(t.Token); err != nil {
		return Fenced{}, invalidToken(err)
	}
	in := wire.Request{Token: wire.IntOf(t.Token), Issuer: t.Issuer, Scope: t.Scope, Signature: t.Signature, Mode: mode, Access: access}
	var out wire.FenceAccepted
	err := c.exchange(ctx, &op.Fence, resource, in, &out, refusal{resource: resource, fence: true, token: t.Token})
	if err != nil {
		return Fenced{}, err
	}
	return Fenced{Resource: resource, Token: out.Token, IdempotencyKey: out.IdempotencyKey}, nil
}

// Report is a decision a guard made on its own (an HTTP middleware, a SQL
// guard), reported to the server so it shows in the rejection history and
// the event stream.
type Report struct {
	Resource string
	guard.Decision
	Source string    // who decided, e.g. "billing-api"
	At     time.Time // zero: the server's now
	// Signature is the token's signature as the guard received it: a valid
	// one proves to the server that it issued the token.
	Signature string
	// Read: the decision was on a read (the history shows it as one).
	Read bool
}

// Report sends decisions to POST /v1/decisions and returns how many were
// recorded.
func (c *Client) Report(ctx context.Context, reports ...Report) (int, error) {
	type decision struct {
		ResourceID string `json:"resourceId"`
		Token      int64  `json:"token"`
		Accepted   bool   `json:"accepted"`
		Required   int64  `json:"required,omitempty"`
		Reason     string `json:"reason,omitempty"`
		Source     string `json:"source"`
		At         string `json:"at,omitempty"`
		Signature  string `json:"signature,omitempty"`
		Access     string `json:"access,omitempty"`
	}
	in := struct {
		Decisions []decision `json:"decisions"`
	}{Decisions: make([]decision, 0, len(reports))}
	for i, r := range reports {
		if err := guard.ValidateResourceID(r.Resource); err != nil {
			return 0, invalid("resourceId", fmt.Errorf("report %d: %w", i, err))
		}
		if err := guard.ValidateToken(r.Presented); err != nil {
			return 0, invalid("token", fmt.Errorf("report %d: %w", i, err))
		}
		w := decision{ResourceID: r.Resource, Token: r.Presented, Accepted: r.Accepted, Required: r.Required, Reason: r.Reason, Source: r.Source, Signature: r.Signature}
		if r.Read {
			w.Access = "read" // fenceview.AccessRead
		}
		if !r.At.IsZero() {
			w.At = wire.FormatTime(r.At)
		}
		in.Decisions = append(in.Decisions, w)
	}
	var out struct {
		Recorded int `json:"recorded"`
	}
	if err := c.call(ctx, http.MethodPost, c.path("/v1/decisions"), nil, in, &out, refusal{}); err != nil {
		return 0, err
	}
	return out.Recorded, nil
}

// errorsIsTemporary reports whether err is worth retrying until the lease
// ends: transport failures, 429 and 5xx answers; refusals are final.
func errorsIsTemporary(err error) bool {
	if errors.Is(err, ErrClosed) {
		return false
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Temporary()
	}
	return true
}
