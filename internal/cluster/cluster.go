// Package cluster runs fenceview as a cluster of nodes over etcd, so no
// single machine can take the locks down.
//
// The durable state (resources, token counters, marks, the ordered event
// log, the issuer id) lives in etcd. One node at a time leads, elected with
// etcd's concurrency.Election: it runs the lock service (package issuer)
// over a Store whose every group commit is an etcd transaction conditional
// on the leader's election key still being the one it won with. A leader
// that was paused, partitioned or slow past its session's TTL has lost
// that key, so its transactions fail and it commits nothing; it steps down
// and reloads. Tokens come from counters kept in etcd and advanced only in
// those transactions, so they strictly increase across leader changes.
//
// Followers forward every request to the leader (a reverse proxy to the
// leader's advertised URL); while there is none they hold a request for a
// few seconds, then answer 503 with Retry-After (failover.go). Every node
// copies the cluster's event log into its own SQLite history (see the
// feed), so history survives on every node.
//
// Waiters (acquire with waitMs) are not carried over a leader change: they
// live in the leader's memory, and the leader that loses its term answers
// them 503 "the server is shutting down", which clients retry like any 503.
// RPC stream connections end with the term too: once each has answered
// what it took, it closes with 1012 and its client reconnects, to this
// node or another, and so to the next leader (httpapi's rpc.go).
// Leases are carried over: they are part of each resource's state in etcd.
package cluster

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/clock"
	"github.com/fenceview/fenceview/internal/issuer"
	"github.com/fenceview/fenceview/internal/signing"
)

// History is this node's own record of the cluster's events (sqlite.DB).
type History interface {
	Apply(ctx context.Context, resources []*fenceview.Resource, events []fenceview.Event) error
	MaxSeq(ctx context.Context) (int64, error)
}

// Config configures a node.
type Config struct {
	Endpoints   []string      // etcd client URLs
	Prefix      string        // keys live under it; default /fenceview/
	Advertise   string        // this node's base URL for its peers, e.g. http://10.0.0.5:8080
	ElectionTTL time.Duration // a dead leader's term ends within it; default 2s, whole seconds
	Issuer      string        // wanted issuer id; empty: the cluster's, created on first start
	History     History
	// Serve builds the handler that answers requests while this node leads,
	// over the lock service and signing keys of that term. Reads of History
	// must call sync first: the leader's copy runs a little behind its
	// commits, and sync waits until it holds every event published.
	Serve func(svc fenceview.Services, keys *signing.Keyring, sync func(context.Context) error) http.Handler
	// SigningKeys, when set, are fixed keys (from a file) every node is
	// given; otherwise the keys are the cluster's, kept in etcd.
	SigningKeys       *signing.Keyring
	RequireSignatures bool
	// UnsignedGrants: the leader issues grants without a signature
	// (--signing=off); the keys are still kept and published.
	UnsignedGrants bool
	// MaxResources and MaxWaiters bound each term's service as they bound a
	// single server's (0: the issuer's defaults).
	MaxResources, MaxWaiters int
	// AdminToken turns auth on; the API keys are the cluster's (Credentials).
	// Credentials, when set, is given the cluster's keyring before any term
	// begins, so Serve may use what it builds from it.
	AdminToken  string
	Credentials func(*auth.Keyring)
	// RequestTimeout is the node's http.Server's read and write timeout
	// (zero: none); a request forwarded to the leader that may wait for a
	// lock gets the longest wait on top, and a forwarded websocket is
	// bounded by the leader instead.
	RequestTimeout time.Duration
	// Access wraps the node's own route, GET /v1/cluster, in the API's
	// access check (it names members and internal URLs: viewers only).
	// Without it, and with auth on, the route answers 401 to everyone.
	Access func(http.Handler) http.Handler
	// LogRetention is how many events the log in etcd keeps (default
	// 1,000,000); a node away longer has a gap in its history.
	LogRetention int64
	Clock        clock.Clock
	Logger       *slog.Logger
}

// DefaultPrefix is where the cluster's keys live unless told otherwise.
const DefaultPrefix = "/fenceview/"

// DefaultElectionTTL is the election TTL unless told otherwise: the
// shortest lease etcd grants with its default election timeout (1s). A
// dead leader's process is usually found sooner (failover.go).
const DefaultElectionTTL = 2 * time.Second

// Member is a node as the cluster sees it.
type Member struct {
	ID   string `json:"id"`
	URL  string `json:"url"`
	Role string `json:"role,omitempty"`

	lease clientv3.LeaseID // a leader's session lease (failover.go)
}

// Node is one fenceview node of a cluster. It serves HTTP (ServeHTTP) as
// leader or follower.
type Node struct {
	cfg    Config
	cli    *clientv3.Client
	keys   keys
	self   Member
	issuer string
	ttl    int // seconds
	log    *slog.Logger

	creds      *auth.Keyring          // the cluster's API keys (authkeys.go)
	peerSecret string                 // proves a forwarded request's client address (peer.go)
	current    atomic.Pointer[term]   // set while this node leads and serves
	leader     atomic.Pointer[Member] // the leader as etcd says, nil when none (setLeader)
	ls         leaderState
	gaps       atomic.Int64 // holes found in the history (see the feed)
	keep       atomic.Int64 // events the log keeps (Config.LogRetention)
	closed     sync.Once

	proxyMu sync.Mutex
	proxies map[string]http.Handler
	proxyRT http.RoundTripper

	cancel context.CancelFunc
	done   sync.WaitGroup
}

// term is one period of leadership.
type term struct {
	svc     *issuer.Service
	handler http.Handler
	key     string
	rev     int64
	leading clientv3.Cmp
}

// Start connects to etcd, settles the cluster's issuer id and starts
// campaigning, following the leader meanwhile. It returns at once.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("cluster: no etcd endpoints")
	}
	u, err := url.Parse(cfg.Advertise)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("cluster: --advertise %q is not an http(s) URL", cfg.Advertise)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if !strings.HasSuffix(cfg.Prefix, "/") {
		cfg.Prefix += "/"
	}
	if cfg.ElectionTTL <= 0 {
		cfg.ElectionTTL = DefaultElectionTTL
	}
	if cfg.LogRetention <= 0 {
		cfg.LogRetention = 1_000_000
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.History == nil || cfg.Serve == nil {
		return nil, errors.New("cluster: History and Serve are required")
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: etcd client: %w", err)
	}
	id := sha256.Sum256([]byte(strings.TrimSuffix(cfg.Advertise, "/")))
	n := &Node{
		cfg:     cfg,
		cli:     cli,
		keys:    keys{prefix: cfg.Prefix},
		self:    Member{ID: "node-" + hex.EncodeToString(id[:6]), URL: strings.TrimSuffix(cfg.Advertise, "/")},
		ttl:     int(math.Ceil(cfg.ElectionTTL.Seconds())),
		log:     cfg.Logger.With("node", "node-"+hex.EncodeToString(id[:6])),
		proxies: map[string]http.Handler{},
		proxyRT: &http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute},
	}
	n.keep.Store(cfg.LogRetention)
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	n.issuer, err = n.settleIssuer(sctx, cfg.Issuer)
	if err == nil {
		err = n.settlePeerSecret(sctx)
	}
	cancel()
	if err == nil {
		err = n.openCredentials(ctx, cfg.AdminToken)
	}
	if err == nil && cfg.Credentials != nil {
		cfg.Credentials(n.creds)
	}
	if err != nil {
		cli.Close()
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n.cancel = cancel
	n.done.Add(4)
	go func() { defer n.done.Done(); n.watchKeys(rctx) }()
	go func() { defer n.done.Done(); n.watchLeader(rctx) }()
	go func() { defer n.done.Done(); n.watchLeaderProcess(rctx) }()
	go func() { defer n.done.Done(); n.run(rctx) }()
	return n, nil
}

// Close ends this node's part in the cluster: a leader resigns (the next
// leader takes over at once, not after the TTL) after committing what is
// in flight.
func (n *Node) Close() error {
	var err error
	n.closed.Do(func() {
		n.cancel()
		n.done.Wait()
		err = n.cli.Close()
	})
	return err
}

// SetLogRetention changes how many events the log in etcd keeps, from the
// next trim on.
func (n *Node) SetLogRetention(events int64) {
	if events > 0 {
		n.keep.Store(events)
	}
}

// Self is this node.
func (n *Node) Self() Member { return n.self }

// Issuer is the cluster's issuer id.
func (n *Node) Issuer() string { return n.issuer }

// Service is the lock service while this node leads, nil otherwise.
func (n *Node) Service() fenceview.Services {
	if t := n.current.Load(); t != nil {
		return t.svc
	}
	return nil
}

// Leader is the leader as etcd last said, nil when there is none.
func (n *Node) Leader() *Member { return n.leader.Load() }

// HistoryGaps counts the holes this node found in its history: events
// trimmed from the cluster's log before it could copy them.
func (n *Node) HistoryGaps() int64 { return n.gaps.Load() }

// Client is the node's etcd client.
func (n *Node) Client() *clientv3.Client { return n.cli }

// settleIssuer returns the cluster's issuer id, creating it on the first
// start of the first node. A node told another id refuses to start: two
// ids in one cluster would make its tokens incomparable.
func (n *Node) settleIssuer(ctx context.Context, want string) (string, error) {
	id := want
	if id == "" {
		var b [8]byte
		rand.Read(b[:])
		id = "fenceview-" + hex.EncodeToString(b[:])
	}
	key := n.keys.issuer()
	resp, err := n.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, id)).Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		return "", fmt.Errorf("cluster: reading the issuer id from etcd: %w", err)
	}
	if resp.Succeeded {
		return id, nil
	}
	got := string(resp.Responses[0].GetResponseRange().Kvs[0].Value)
	if want != "" && want != got {
		return "", fmt.Errorf("cluster: the cluster's issuer id is %q; --issuer %q differs", got, want)
	}
	return got, nil
}

// run takes part in elections until ctx ends: follow, campaign, lead, and
// again after a term ends.
func (n *Node) run(ctx context.Context) {
	untilDone(ctx, 100*time.Millisecond, n.term, func(err error) {
		n.log.Warn("cluster term ended; campaigning again", "err", err)
	})
}

// untilDone runs once again and again until ctx ends. After each run that
// ends before ctx does it calls ended with the run's error and pauses, so
// that an etcd that is gone is not spun on.
func untilDone(ctx context.Context, pause time.Duration, once func(context.Context) error, ended func(error)) {
	for ctx.Err() == nil {
		err := once(ctx)
		if ctx.Err() != nil {
			return
		}
		ended(err)
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
}

func (n *Node) term(ctx context.Context) error {
	// The session outlives ctx so that Close can still revoke its lease,
	// handing leadership over at once.
	sess, err := concurrency.NewSession(n.cli, concurrency.WithTTL(n.ttl), concurrency.WithContext(context.WithoutCancel(ctx)))
	if err != nil {
		return err
	}
	defer sess.Close()
	self, _ := json.Marshal(n.self)
	if _, err := n.cli.Put(ctx, n.keys.member(n.self.ID), string(self), clientv3.WithLease(sess.Lease())); err != nil {
		return err
	}

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-sess.Done(): // the lease is gone: so is any term on it
			cancel()
		case <-cctx.Done():
		}
	}()
	go n.keepAlive(cctx, sess.Lease())

	feedCtx, stopFeed := context.WithCancel(cctx)
	feedDone := make(chan struct{})
	go func() { defer close(feedDone); n.follow(feedCtx) }()
	el := concurrency.NewElection(sess, n.keys.election())
	err = el.Campaign(cctx, string(self))
	stopFeed()
	<-feedDone
	if err != nil {
		return err
	}
	return n.lead(cctx, el)
}

// lead serves as leader until the term ends: ctx ends (shutdown, or the
// session's lease was lost) or a commit fails.
func (n *Node) lead(ctx context.Context, el *concurrency.Election) error {
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		el.Resign(rctx)
		cancel()
	}()
	leading := clientv3.Compare(clientv3.CreateRevision(el.Key()), "=", el.Rev())
	// The history must hold every event before this term's first.
	if _, _, err := n.catchUp(ctx); err != nil {
		return fmt.Errorf("catching up the history: %w", err)
	}
	resources, seq, err := loadState(ctx, n.cli, n.keys)
	if err != nil {
		return fmt.Errorf("loading state: %w", err)
	}
	failed := make(chan error, 1)
	fail := func(err error) {
		select {
		case failed <- err:
		default:
		}
	}
	local, err := n.cfg.History.MaxSeq(ctx)
	if err != nil {
		return err
	}
	lw := newLocalWriter(n.cfg.History, local, fail)
	defer lw.close()
	st := &store{cli: n.cli, keys: n.keys, leader: leading, local: lw, failed: fail, log: n.log.Warn}
	keyring := n.cfg.SigningKeys
	if keyring == nil {
		if keyring, err = signing.Open(ctx, &signingStore{cli: n.cli, keys: n.keys, leading: leading}, n.cfg.Clock.Now); err != nil {
			return fmt.Errorf("loading the signing keys: %w", err)
		}
	}
	var signer issuer.Signer = keyring
	if n.cfg.UnsignedGrants {
		signer = nil
	}
	svc := issuer.New(st, resources, seq, issuer.Config{Issuer: n.issuer, Clock: n.cfg.Clock, Logger: n.cfg.Logger,
		Signer: signer, Verifier: keyring.Verifier(), RequireSignatures: n.cfg.RequireSignatures,
		MaxResources: n.cfg.MaxResources, MaxWaiters: n.cfg.MaxWaiters})
	// Reads of the history wait until it holds every event published when
	// they began.
	sync := func(ctx context.Context) error { return lw.sync(ctx, svc.LastSeq()) }
	n.current.Store(&term{svc: svc, handler: n.cfg.Serve(svc, keyring, sync), key: el.Key(), rev: el.Rev(), leading: leading})
	n.notify() // requests held for a leader (ServeHTTP)
	n.log.Info("leading the cluster", "url", n.self.URL, "resources", len(resources), "lastSeq", seq)

	trim := time.NewTicker(10 * time.Second)
	defer trim.Stop()
	var why error
	for why == nil {
		select {
		case <-ctx.Done():
			why = ctx.Err()
		case why = <-failed:
		case <-trim.C:
			if err := n.TrimLog(ctx); err != nil {
				n.log.Warn("trimming the event log", "err", err)
			}
		}
	}
	n.current.Store(nil)
	n.notify()
	svc.Close()
	n.log.Info("leadership ended", "why", why)
	return why
}

// confirm checks, with a linearizable read, that t's election key is still
// ours: a read served after it sees every change acknowledged before it.
func (n *Node) confirm(ctx context.Context, t *term) error {
	resp, err := n.cli.Get(ctx, t.key)
	if err != nil {
		return err
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != t.rev {
		return errDeposed
	}
	return nil
}

// watchLeader keeps n.leader up to date: the candidate with the oldest
// election key leads.
func (n *Node) watchLeader(ctx context.Context) {
	pfx := n.keys.election() + "/"
	untilDone(ctx, 200*time.Millisecond, func(ctx context.Context) error {
		rev, err := n.readLeader(ctx, pfx)
		if err == nil {
			wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
			for wr := range n.cli.Watch(wctx, pfx, clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
				if wr.Err() != nil {
					break
				}
				if _, err = n.readLeader(ctx, pfx); err != nil {
					break
				}
			}
			cancel()
		}
		return err
	}, func(error) {
		n.setLeader(nil) // unknown: answer 503 rather than guess
	})
}

func (n *Node) readLeader(ctx context.Context, pfx string) (int64, error) {
	resp, err := n.cli.Get(ctx, pfx, clientv3.WithFirstCreate()...)
	if err != nil {
		return 0, err
	}
	if len(resp.Kvs) == 0 {
		n.setLeader(nil)
		return resp.Header.Revision, nil
	}
	var m Member
	if err := json.Unmarshal(resp.Kvs[0].Value, &m); err != nil || m.URL == "" {
		n.setLeader(nil)
		return resp.Header.Revision, nil
	}
	m.Role = "leader"
	m.lease = clientv3.LeaseID(resp.Kvs[0].Lease)
	n.setLeader(&m)
	return resp.Header.Revision, nil
}

// Members lists the running nodes, the leader marked.
func (n *Node) Members(ctx context.Context) ([]Member, error) {
	resp, err := n.cli.Get(ctx, n.keys.members(), clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	leader := n.leader.Load()
	out := []Member{}
	for _, kv := range resp.Kvs {
		var m Member
		if json.Unmarshal(kv.Value, &m) != nil {
			continue
		}
		m.Role = "follower"
		if leader != nil && leader.ID == m.ID {
			m.Role = "leader"
		}
		out = append(out, m)
	}
	return out, nil
}
