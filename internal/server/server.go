// Package server wires fenceview together: the SQLite record, the lock
// service, the JSON API and the dashboard, listening on one address. The
// fenceview command and the in-process test server (client/fenceviewtest)
// both start it, so tests run exactly what users run.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/gofrs/flock"

	"github.com/fenceview/fenceview/dashboard"
	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/clock"
	"github.com/fenceview/fenceview/internal/cluster"
	"github.com/fenceview/fenceview/internal/demo"
	"github.com/fenceview/fenceview/internal/fair"
	"github.com/fenceview/fenceview/internal/httpapi"
	"github.com/fenceview/fenceview/internal/issuer"
	"github.com/fenceview/fenceview/internal/signing"
	"github.com/fenceview/fenceview/internal/sqlite"
	"github.com/fenceview/fenceview/internal/telemetry"
)

// Config says where and how to serve.
type Config struct {
	Addr       string // e.g. 127.0.0.1:8080, or 127.0.0.1:0 for any free port
	DBPath     string
	Issuer     string // empty: the id kept in the database
	AdminToken string
	Demo       bool // also run simulated clients
	// DashboardAdmin offers force-expire and reset on the dashboard with
	// auth off (with auth on, admin sessions always get them).
	DashboardAdmin bool
	// SigningKeyFile: sign with this PEM Ed25519 key instead of the keys
	// kept in the database. RequireSignatures: the server's own fence
	// refuses unsigned tokens (bad-signature).
	SigningKeyFile    string
	RequireSignatures bool
	// UnsignedGrants issues grants without a signature (--signing=off), for
	// deployments whose guards never verify one: signing is about a third
	// of a grant's CPU. The keys are still kept and published, so tokens
	// signed before stay verifiable.
	UnsignedGrants bool
	// FenceMode is the least mode of the server's fence (--fence-mode):
	// empty or fenceview.FenceModeMark, or fenceview.FenceModeCurrent.
	FenceMode string
	Clock     clock.Clock
	Logger    *slog.Logger
	AccessLog *slog.Logger  // one line per answered request; nil for none
	Cluster   ClusterConfig // cluster mode when Cluster.Etcd is set

	Access // who may connect and how (access.go)
	Limits // how much it takes on
}

// Limits are the bounds an operator sets on a server (the command's flags,
// docs/security.md and docs/operations.md); zero values take the defaults
// of issuer and httpapi.
type Limits struct {
	MaxResources   int
	MaxWaiters     int
	MaxWebsockets  int
	RequestTimeout time.Duration
	// Overload bounds admission control (package fair; zero fields take
	// fair.Defaults), MaxWaitersPerKey each flow's waiting acquires.
	Overload         fair.Config
	MaxWaitersPerKey int
	// History bounds the event history, pruned in the background (zero:
	// keep every event).
	History sqlite.Retention
}

// Server is a running fenceview.
type Server struct {
	DB       *sqlite.DB
	Service  *issuer.Service
	API      *httpapi.Server
	Metrics  *telemetry.Metrics
	IssuerID string
	Keys     *signing.Keyring
	// Credentials are the API keys and the admin token; Sessions the
	// dashboard's logins.
	Credentials *auth.Keyring
	Sessions    *auth.Sessions
	Node        *cluster.Node // cluster mode only; Service and API are then the leader's, per term

	logger *slog.Logger
	tls    bool
	ln     net.Listener
	http   *http.Server
	dbLock *flock.Flock
	demo   *demo.Sim
	stop   chan struct{} // closed by Close: ends the session sweeper
	swept  chan struct{} // closed when the sweeper has returned
}

// sessionSweep is how often expired dashboard sessions are ended, and
// with them their websockets (a session is checked at each request too).
const sessionSweep = 10 * time.Second

// startSweeper ends expired sessions every sessionSweep, on the server's
// clock, so a session's open streams end within that of its expiry.
func (s *Server) startSweeper(c clock.Clock) {
	if s.Sessions == nil {
		return
	}
	s.stop, s.swept = make(chan struct{}), make(chan struct{})
	t := c.NewTimer(sessionSweep) // here, so a clock moved after Start fires it
	go func() {
		defer close(s.swept)
		for {
			select {
			case <-t.C():
				s.Sessions.Sweep()
				t = c.NewTimer(sessionSweep)
			case <-s.stop:
				t.Stop()
				return
			}
		}
	}()
}

// SetAdminToken replaces the admin token of a running server: the old one
// authenticates nothing from its return, and its streams and sessions end
// (auth.Keyring.SetAdminToken). The fenceview command calls it on SIGHUP.
func (s *Server) SetAdminToken(token string) error {
	if s.Credentials == nil || !s.Credentials.Enabled() {
		return errors.New("auth is off: the admin token can only be set at start")
	}
	return s.Credentials.SetAdminToken(token)
}

// ErrUnsignedRequired is Start's refusal of a server that would issue
// unsigned grants and refuse them at its own fence.
var ErrUnsignedRequired = errors.New("--signing=off with --require-signatures would refuse every token this server issues")

// Start opens the database, starts the lock service and serves HTTP in the
// background. It returns once the server is listening.
func Start(ctx context.Context, cfg Config) (_ *Server, err error) {
	if cfg.UnsignedGrants && cfg.RequireSignatures {
		return nil, ErrUnsignedRequired
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = httpapi.DefaultRequestTimeout
	}
	s := &Server{logger: cfg.Logger}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if err := s.openStore(ctx, cfg); err != nil {
		return nil, err
	}
	if len(cfg.Cluster.Etcd) > 0 {
		if err := s.startCluster(ctx, cfg); err != nil {
			return s, err
		}
		s.startSweeper(cfg.Clock)
		return s, nil
	}
	if err := s.openIssuer(ctx, cfg); err != nil {
		return nil, err
	}
	if err := s.buildAPI(ctx, cfg); err != nil {
		return nil, err
	}
	if err := s.serve(cfg); err != nil {
		return nil, err
	}
	if cfg.Demo {
		s.demo = demo.Start(s.Service, demo.Config{Logger: cfg.Logger})
	}
	s.startSweeper(cfg.Clock)
	cfg.Logger.Info("fenceview ready", "url", s.URL()+"/", "db", cfg.DBPath, "issuer", s.IssuerID,
		"resources", s.Service.Metrics().Resources, "lastSeq", s.Service.LastSeq())
	return s, nil
}

// openStore takes the database's lock file, opens the database (giving a
// new one its identity) and starts pruning its history and measuring it.
func (s *Server) openStore(ctx context.Context, cfg Config) (err error) {
	if s.dbLock, err = lockDB(cfg.DBPath); err != nil {
		return err
	}
	if s.DB, err = sqlite.OpenInit(ctx, cfg.DBPath, firstStart(cfg)); err != nil {
		return err
	}
	warnIfReadable(cfg.Logger, cfg.DBPath)
	s.DB.ObservePrune = func(n int, err error) {
		if err != nil {
			cfg.Logger.Error("pruning the history", "err", err, "deleted", n) // retried at the next round
		} else if n > 0 {
			cfg.Logger.Debug("history pruned", "deleted", n)
		}
	}
	s.DB.StartPruning(cfg.History, cfg.Clock)
	s.Metrics = telemetry.New()
	s.DB.ObserveCommit = s.Metrics.ObserveSQLiteCommit
	s.DB.ObserveCheckpoint = s.Metrics.ObserveCheckpoint
	return nil
}

// openIssuer loads the signing keys and opens the lock service on the
// database.
func (s *Server) openIssuer(ctx context.Context, cfg Config) (err error) {
	if cfg.SigningKeyFile != "" {
		s.Keys, err = signing.FromFile(cfg.SigningKeyFile)
	} else {
		s.Keys, err = signing.Open(ctx, s.DB, cfg.Clock.Now)
	}
	if err != nil {
		return err
	}
	if s.Service, err = issuer.Open(ctx, s.DB, issuer.Config{Issuer: cfg.Issuer, Clock: cfg.Clock, Logger: cfg.Logger,
		Signer: signer(s.Keys, cfg.UnsignedGrants), Verifier: s.Keys.Verifier(), RequireSignatures: cfg.RequireSignatures, Observer: s.Metrics,
		MaxResources: cfg.MaxResources, MaxWaiters: cfg.MaxWaiters}); err != nil {
		return err
	}
	s.IssuerID = s.Service.Issuer()
	s.Metrics.Watch(s.Service)
	return nil
}

// buildAPI puts the HTTP API, its credentials and sessions, and the
// dashboard in front of the lock service.
func (s *Server) buildAPI(ctx context.Context, cfg Config) (err error) {
	s.API = httpapi.New(s.Service, s.DB, cfg.Logger)
	s.API.SigningKeys = s.Keys
	s.API.FenceMode = cfg.FenceMode
	s.API.Metrics = s.Metrics.Handler()
	s.API.StreamLag = s.Metrics.ObserveStreamLag
	s.API.ObserveGrant = s.Metrics.ObserveGrant
	s.API.MaxWebsockets, s.API.RequestTimeout = cfg.MaxWebsockets, cfg.RequestTimeout
	s.API.Overload = s.overload(cfg)
	if s.Credentials, err = auth.NewKeyring(ctx, s.DB, cfg.AdminToken, cfg.Clock.Now); err != nil {
		return err
	}
	s.Sessions = newSessions(s.Credentials, cfg)
	s.API.Auth, s.API.Sessions, s.API.Throttle = s.Credentials, s.Sessions, s.Sessions.Throttle
	dash := dashboard.New(s.Service, s.Service, s.DB, cfg.Clock.Now)
	dash.Logger = cfg.Logger
	dash.Sessions = s.Sessions
	dash.Keys, dash.AdminWithoutAuth = s.Credentials, cfg.DashboardAdmin
	dash.Gatherer = s.Metrics.Registry
	dash.Register(s.API)
	return nil
}

// serve listens and serves the API, its requests and answers bounded in
// time.
func (s *Server) serve(cfg Config) (err error) {
	if s.ln, err = s.listen(cfg); err != nil {
		return err
	}
	s.API.AllowedHosts = httpapi.NewHostList(s.ln.Addr().String(), append([]string{cfg.Addr}, cfg.AllowedHosts...))
	s.http = &http.Server{
		Handler:           telemetry.Instrument(s.API, s.Metrics, cfg.AccessLog),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	// Whole requests and answers are bounded too (a body sent a byte at a
	// time, an answer nobody reads); websockets set their own deadlines,
	// and a waiting acquire gets its wait on top.
	s.http.ReadTimeout, s.http.WriteTimeout = cfg.RequestTimeout, cfg.RequestTimeout
	go func() {
		if err := s.http.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			cfg.Logger.Error("http server", "err", err)
		}
	}()
	if cfg.AdminToken == "" && !isLoopback(s.ln.Addr()) {
		cfg.Logger.Warn("SECURITY: listening beyond loopback without --admin-token (--insecure-no-auth); anyone who can reach this address can take, release and poison every lock",
			"addr", s.ln.Addr().String())
	}
	return nil
}

// firstStart gives a new database the identity guards will know this
// server by, its issuer id and first signing key, before the database
// appears at its path: a power cut during a first start leaves no
// database, or one with the identity every later start keeps (a cluster's
// identity lives in etcd).
func firstStart(cfg Config) func(context.Context, *sqlite.DB) error {
	if len(cfg.Cluster.Etcd) > 0 {
		return nil
	}
	return func(ctx context.Context, db *sqlite.DB) error {
		if cfg.SigningKeyFile == "" {
			if _, err := signing.Open(ctx, db, cfg.Clock.Now); err != nil {
				return err
			}
		}
		_, err := db.Issuer(ctx, cfg.Issuer)
		return err
	}
}

// signer is what signs grants: the keyring, or nothing with --signing=off.
func signer(keys *signing.Keyring, unsigned bool) issuer.Signer {
	if unsigned {
		return nil
	}
	return keys
}

// URL is the base URL the server answers on, e.g. http://127.0.0.1:8080.
func (s *Server) URL() string {
	if s.ln == nil {
		return ""
	}
	addr := s.ln.Addr().(*net.TCPAddr)
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	scheme := "http://"
	if s.tls {
		scheme = "https://"
	}
	return scheme + net.JoinHostPort(host, fmt.Sprint(addr.Port))
}

// Close stops serving: waiters and streams are ended first (a waiter may
// otherwise hold shutdown for minutes), then in-flight requests finish,
// then the database closes. It may be called more than once.
func (s *Server) Close() error {
	var errs []error
	if s.demo != nil {
		s.demo.Stop() // before the service, so no simulated call meets a closed one
		s.demo = nil
	}
	if s.stop != nil {
		close(s.stop)
		<-s.swept
		s.stop = nil
	}
	if s.Node != nil {
		errs = append(errs, s.Node.Close()) // resigns, so another node leads at once
	}
	if s.API != nil {
		// Before the service: the streams' handlers still use it, and
		// http.Server.Shutdown does not wait for hijacked connections.
		s.API.CloseWebsockets()
	}
	if s.Service != nil {
		s.Service.Close()
	}
	if s.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		errs = append(errs, s.http.Shutdown(ctx))
		cancel()
	} else if s.ln != nil {
		errs = append(errs, s.ln.Close())
	}
	if s.DB != nil {
		errs = append(errs, s.DB.Close())
	}
	if s.dbLock != nil {
		errs = append(errs, s.dbLock.Unlock())
		s.dbLock = nil
	}
	return errors.Join(errs...)
}

func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// DefaultHoldShed is how long a shed answer is held at most before it
// goes out (httpapi.Overload.HoldShed).
const DefaultHoldShed = time.Second

// overload is the API's admission control, its metrics fed to s.Metrics.
// In cluster mode each term's API has its own: a new leader starts with
// empty queues.
func (s *Server) overload(cfg Config) *httpapi.Overload {
	return &httpapi.Overload{
		Dispatcher: fair.NewDispatcher(cfg.Overload), MaxWaitersPerKey: cfg.MaxWaitersPerKey,
		ObserveShed: s.Metrics.ObserveShed, ObserveQueueWait: s.Metrics.ObserveQueueWait, ObservePace: s.Metrics.ObservePace,
		HoldShed: DefaultHoldShed,
	}
}
