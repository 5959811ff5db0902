// Command fenceview is the fenceview server: it issues leases and fencing
// tokens, guards fenced writes, keeps the history in SQLite and streams it
// live to its dashboard and to anyone else who asks.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/clock"
	"github.com/fenceview/fenceview/internal/cluster"
	"github.com/fenceview/fenceview/internal/fair"
	"github.com/fenceview/fenceview/internal/httpapi"
	"github.com/fenceview/fenceview/internal/issuer"
	"github.com/fenceview/fenceview/internal/server"
	"github.com/fenceview/fenceview/internal/sqlite"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if len(os.Args) > 1 {
		for _, c := range subcommands {
			if os.Args[1] == c.name {
				os.Exit(c.run(ctx, os.Args[2:], os.Stdout, os.Stderr))
			}
		}
	}
	m := NewMain()
	if err := m.ParseFlags(os.Args[1:]); err == flag.ErrHelp || err == errVersion {
		os.Exit(0)
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "fenceview:", err)
		os.Exit(2)
	}
	// Before Run: once the server says it is ready, a SIGHUP must not
	// kill it (the default action).
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	if err := m.Run(ctx); err != nil {
		m.Logger.Error("fenceview could not start", "err", err)
		os.Exit(1)
	}
	go func() {
		for range hup {
			if err := m.ReloadAdminToken(); err != nil {
				m.Logger.Error("SIGHUP: admin token not replaced", "err", err)
			} else {
				m.Logger.Info("SIGHUP: admin token re-read; the old one's streams and sessions are ended")
			}
		}
	}()
	<-ctx.Done()
	stop() // a second signal kills at once
	m.Logger.Info("shutting down")
	if err := m.Close(); err != nil {
		m.Logger.Error("shutdown", "err", err)
		os.Exit(1)
	}
}

// subcommands are the commands besides the server; `fenceview --help`
// lists them and each has its own --help.
var subcommands = []struct {
	name, usage, summary string
	run                  func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}{
	{"backup", "backup [--db FILE] [--out FILE]", "copy a live database consistently", runBackup},
	{"keys", "keys create|list|revoke [flags]", "manage the API keys of a running server", runKeys},
	{"dev-cert", "dev-cert [--dir DIR] [--host NAME]...", "make a CA, a server and a client certificate for trying TLS and mTLS locally", runDevCert},
}

// Main is the whole program, so tests can start the real server on
// 127.0.0.1:0 with a temporary database.
type Main struct {
	Addr       string
	DBPath     string
	Issuer     string
	AdminToken string
	// InsecureShortAdminToken accepts an admin token under MinAdminToken
	// bytes (tests, demos); otherwise ParseFlags refuses it.
	InsecureShortAdminToken bool
	// AdminTokenFile, when set, holds the admin token (surrounding white
	// space ignored); SIGHUP re-reads it (ReloadAdminToken).
	AdminTokenFile string
	Demo           bool // also run simulated clients (internal/demo)
	// DashboardAdmin shows force-expire and reset on the dashboard with
	// auth off; with auth on, admin sessions always see them.
	DashboardAdmin bool
	AccessLog      bool // log every answered request
	server.Access
	// SigningKey is a PEM Ed25519 private key file to sign grants with;
	// empty: keys kept in the database, the first made on first start.
	SigningKey        string
	RequireSignatures bool
	Signing           string // --signing: on (every grant signed) or off
	FenceMode         string // --fence-mode: mark (the rule) or current

	// Cluster mode (see package cluster): on when Etcd is set.
	Etcd        string // comma-separated etcd client URLs
	EtcdPrefix  string
	Advertise   string
	ElectionTTL time.Duration
	// Limits (docs/security.md), admission control (docs/operations.md,
	// "Overload") and history retention (docs/operations.md; zero keeps
	// every event).
	server.Limits

	Clock  clock.Clock
	Logger *slog.Logger
	// LogOutput receives the log ParseFlags sets up; Stdout, --version.
	LogOutput io.Writer
	Stdout    io.Writer

	DB      *sqlite.DB
	Service *issuer.Service
	API     *httpapi.Server

	server    *server.Server
	accessLog *slog.Logger // set by ParseFlags
}

// MinAdminToken is the shortest admin token ParseFlags accepts: 32 bytes,
// 256 bits when they are random, as `openssl rand -hex 32` gives twice over.
const MinAdminToken = 32

// NewMain returns a Main with the defaults of the command.
func NewMain() *Main {
	return &Main{
		Addr:        "127.0.0.1:8080",
		DBPath:      "fenceview.db",
		EtcdPrefix:  cluster.DefaultPrefix,
		ElectionTTL: cluster.DefaultElectionTTL,
		FenceMode:   fenceview.FenceModeMark,
		Signing:     "on",
		Clock:       clock.Real{},
		Logger:      slog.New(slog.NewTextHandler(os.Stderr, nil)),
		LogOutput:   os.Stderr,
		Stdout:      os.Stdout,

		Limits: server.Limits{
			MaxResources:   issuer.DefaultMaxResources,
			MaxWaiters:     issuer.DefaultMaxWaiters,
			MaxWebsockets:  httpapi.DefaultMaxWebsockets,
			RequestTimeout: httpapi.DefaultRequestTimeout,

			Overload:         fair.Defaults(),
			MaxWaitersPerKey: httpapi.DefaultMaxWaitersPerKey,
		},
	}
}

// ParseFlags reads the command line; both -x and --x forms work.
func (m *Main) ParseFlags(args []string) error {
	fs := flag.NewFlagSet("fenceview", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.StringVar(&m.Addr, "addr", m.Addr, "address to listen on")
	fs.StringVar(&m.DBPath, "db", m.DBPath, "SQLite database file")
	fs.StringVar(&m.Issuer, "issuer", m.Issuer, "issuer id in token envelopes (default: kept in the database, created on first start)")
	fs.StringVar(&m.AdminToken, "admin-token", os.Getenv("FENCEVIEW_ADMIN_TOKEN"), "bearer token required by admin routes (env FENCEVIEW_ADMIN_TOKEN)")
	fs.StringVar(&m.AdminTokenFile, "admin-token-file", os.Getenv("FENCEVIEW_ADMIN_TOKEN_FILE"), "read the admin token from this file instead (env FENCEVIEW_ADMIN_TOKEN_FILE); SIGHUP re-reads it, ending the old token's streams and sessions")
	logFormat := fs.String("log-format", "text", "log format: text or json (one JSON object per line)")
	logLevel := fs.String("log-level", "info", "least severe level logged: debug, info, warn or error")
	fs.BoolVar(&m.AccessLog, "access-log", m.AccessLog, "log every answered request (method, path, route, status, bytes, duration, remote address)")
	version := fs.Bool("version", false, "print the version and exit")
	fs.BoolVar(&m.InsecureShortAdminToken, "insecure-short-admin-token", m.InsecureShortAdminToken, fmt.Sprintf("accept an admin token shorter than %d bytes", MinAdminToken))
	fs.BoolVar(&m.InsecureNoAuth, "insecure-no-auth", m.InsecureNoAuth, "allow listening beyond loopback without --admin-token: anyone who reaches the port can do anything")
	fs.Func("allowed-host", "with auth off, also answer requests for this Host (name, or name:port); repeatable", func(v string) error {
		m.AllowedHosts = append(m.AllowedHosts, v)
		return nil
	})
	fs.StringVar(&m.TLSCert, "tls-cert", m.TLSCert, "serve HTTPS and WSS with this certificate (PEM; with --tls-key)")
	fs.StringVar(&m.TLSKey, "tls-key", m.TLSKey, "the private key of --tls-cert (PEM)")
	fs.StringVar(&m.TLSClientCA, "tls-client-ca", m.TLSClientCA, "also require client certificates signed by this CA (PEM)")
	fs.StringVar(&m.SigningKey, "signing-key", m.SigningKey, "PEM Ed25519 private key (PKCS #8) to sign grants with (default: keys kept in the database, rotated with POST /v1/signing-keys)")
	fs.BoolVar(&m.RequireSignatures, "require-signatures", m.RequireSignatures, "the server's own fence (/v1/fence) refuses tokens without a valid signature (reason bad-signature)")
	fs.StringVar(&m.Signing, "signing", m.Signing, "on: sign every grant; off: issue grants without a signature, for guards that never verify one (about a third less CPU per grant; keys are still published, so tokens signed before stay verifiable)")
	fs.StringVar(&m.FenceMode, "fence-mode", m.FenceMode, "mode of the server's own fence (/v1/fence): mark, the rule, or current: also refuse a token below the last one issued (superseded), whatever the request asks")
	fs.BoolVar(&m.DashboardAdmin, "dashboard-admin", m.DashboardAdmin, "with auth off, also show force-expire and reset on the dashboard's resource pages (with --admin-token, admin sessions always see them)")
	fs.BoolVar(&m.Demo, "demo", m.Demo, "also run simulated clients, so the dashboard has something to show (database fenceview-demo.db unless --db is given)")
	fs.StringVar(&m.Etcd, "etcd", m.Etcd, "etcd client URLs, comma-separated: run as a node of a cluster whose state lives in etcd")
	fs.StringVar(&m.EtcdPrefix, "etcd-prefix", m.EtcdPrefix, "etcd key prefix of the cluster")
	fs.StringVar(&m.Advertise, "advertise", m.Advertise, "this node's base URL for its peers (default: http://<listen address>)")
	fs.DurationVar(&m.ElectionTTL, "election-ttl", m.ElectionTTL, "the leader's session lease (whole seconds): a leader whose machine is gone is replaced within it; one whose process died, sooner")
	fs.IntVar(&m.MaxResources, "max-resources", m.MaxResources, "resources the server may know; a request that would create one more is refused (429)")
	fs.IntVar(&m.MaxWaiters, "max-waiters", m.MaxWaiters, "acquires that may wait for a lock at once, across all clients")
	fs.IntVar(&m.MaxWebsockets, "max-websockets", m.MaxWebsockets, "open event streams and RPC connections, together")
	fs.IntVar(&m.Overload.Seats, "overload-seats", m.Overload.Seats, "lock operations, fences, reports and reads served at once; more wait in fair queues, one per key (default: 32 per processor)")
	fs.IntVar(&m.Overload.LeaseSeats, "overload-lease-seats", m.Overload.LeaseSeats, "of --overload-seats, those kept for renew and release, which go before new acquires (default: a quarter)")
	fs.IntVar(&m.Overload.FlowSeats, "overload-flow-seats", m.Overload.FlowSeats, "seats one key may hold while other keys have requests too (default: 1 per processor, at least 2)")
	fs.IntVar(&m.Overload.FlowQueue, "overload-queue", m.Overload.FlowQueue, "requests one key may have queued for a seat; beyond, 429 overloaded (default: 4 per seat)")
	fs.IntVar(&m.Overload.TotalQueue, "overload-queue-total", m.Overload.TotalQueue, "requests queued for a seat across all keys; beyond, the longest queue gives up its last (default: 64 per seat)")
	fs.DurationVar(&m.Overload.MaxWait, "overload-max-wait", m.Overload.MaxWait, "a new request expected to wait longer than this for a seat is answered 429 overloaded at once")
	fs.Float64Var(&m.Overload.FlowRate, "overload-flow-rate", m.Overload.FlowRate, "while the server is busy, a key sending more new requests than the others is held back to a quarter above the busiest other key's rate, and to no less than this many a second; 0: no pacing (default: 250 per processor)")
	fs.IntVar(&m.MaxWaitersPerKey, "max-waiters-per-key", m.MaxWaitersPerKey, "acquires (waitMs > 0) one key may have waiting at once; beyond, 429 limit (with auth off: per client address)")
	fs.DurationVar(&m.RequestTimeout, "request-timeout", m.RequestTimeout, "longest time to read a request or write an answer (a waiting acquire gets its wait on top)")
	fs.DurationVar(&m.History.MaxAge, "history-retention", m.History.MaxAge, "prune events older than this from the history, in the background (0: keep them all); counters and marks are never pruned")
	fs.Int64Var(&m.History.MaxEvents, "history-max-events", m.History.MaxEvents, "keep at most about this many of the newest events in the history (0: no bound)")
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage: fenceview [flags]\n")
		for _, c := range subcommands {
			fmt.Fprintf(out, "       fenceview %s\n", c.usage)
		}
		fmt.Fprintf(out, "\nIssues fencing tokens, guards fenced writes and shows them live.\n\nCommands (each has its own --help):\n")
		for _, c := range subcommands {
			fmt.Fprintf(out, "  %-9s %s\n", c.name, c.summary)
		}
		fmt.Fprintf(out, "\nFlags of the server:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *version {
		fmt.Fprintln(m.Stdout, "fenceview", buildVersion())
		return errVersion
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	logger, err := newLogger(m.LogOutput, *logFormat, *logLevel)
	if err != nil {
		return err
	}
	m.Logger = logger
	if m.accessLog, err = newLogger(m.LogOutput, *logFormat, "info"); err != nil {
		return err
	}
	if o := m.Overload; o.Seats < 2 || o.LeaseSeats < 1 || o.LeaseSeats >= o.Seats || o.FlowSeats < 1 || o.FlowQueue < 1 || o.TotalQueue < o.FlowQueue || o.MaxWait <= 0 || !(o.FlowRate >= 0) || m.MaxWaitersPerKey < 1 {
		return fmt.Errorf("--overload-seats must be at least 2, --overload-lease-seats between 1 and seats-1, --overload-flow-seats and --overload-queue at least 1, --overload-queue-total at least --overload-queue, --overload-max-wait positive, --overload-flow-rate not negative, --max-waiters-per-key at least 1")
	}
	if m.Overload.FlowRate == 0 {
		m.Overload.FlowRate = -1 // off (zero in fair.Config is its default)
	}
	if m.MaxResources < 1 || m.MaxWaiters < 1 || m.MaxWebsockets < 1 || m.RequestTimeout < time.Second {
		return fmt.Errorf("--max-resources, --max-waiters and --max-websockets must be at least 1, --request-timeout at least 1s")
	}
	if m.AdminTokenFile != "" {
		if m.AdminToken, err = readAdminToken(m.AdminTokenFile); err != nil {
			return err
		}
	}
	if m.FenceMode, err = fenceview.ParseFenceMode(m.FenceMode); err != nil {
		return fmt.Errorf("--fence-mode: %s", fenceview.ErrorMessage(err))
	}
	switch {
	case m.Signing != "on" && m.Signing != "off":
		return fmt.Errorf("--signing must be on or off, not %q", m.Signing)
	case m.Signing == "off" && m.RequireSignatures:
		return fmt.Errorf("--signing=off with --require-signatures would refuse every token this server issues")
	}
	if m.History.MaxAge < 0 || m.History.MaxEvents < 0 {
		return fmt.Errorf("--history-retention and --history-max-events must not be negative (0 keeps every event)")
	}
	if err := m.checkAdminToken(m.AdminToken); err != nil {
		return err
	}
	if err := server.CheckAddr(m.Addr, m.AdminToken, m.InsecureNoAuth); err != nil {
		return err
	}
	// Simulated history stays out of a real database unless asked for.
	dbSet := false
	fs.Visit(func(f *flag.Flag) { dbSet = dbSet || f.Name == "db" })
	if m.Demo && !dbSet {
		m.DBPath = "fenceview-demo.db"
	}
	return nil
}

// Run starts the server in the background and returns once it listens.
func (m *Main) Run(ctx context.Context) error {
	srv, err := server.Start(ctx, server.Config{
		Addr: m.Addr, DBPath: m.DBPath, Issuer: m.Issuer, AdminToken: m.AdminToken,
		Demo: m.Demo, DashboardAdmin: m.DashboardAdmin, Clock: m.Clock, Logger: m.Logger, AccessLog: m.accessLogger(), Access: m.Access,
		SigningKeyFile: m.SigningKey, RequireSignatures: m.RequireSignatures, UnsignedGrants: m.Signing == "off", FenceMode: m.FenceMode,
		Cluster: server.ClusterConfig{
			Etcd: splitList(m.Etcd), Prefix: m.EtcdPrefix, Advertise: m.Advertise, ElectionTTL: m.ElectionTTL,
		},
		Limits: m.Limits,
	})
	if err != nil {
		return err
	}
	m.server = srv
	m.DB, m.Service, m.API = srv.DB, srv.Service, srv.API
	return nil
}

// URL is the base URL the server answers on, e.g. http://127.0.0.1:8080.
func (m *Main) URL() string {
	if m.server == nil {
		return ""
	}
	return m.server.URL()
}

// Close stops the server; see server.Server.Close.
func (m *Main) Close() error {
	if m.server == nil {
		return nil
	}
	return m.server.Close()
}

// ReloadAdminToken replaces the running server's admin token with what
// --admin-token-file now holds. A token given by flag or environment
// cannot be rotated this way (a running process never sees its environment
// change): that is an error, not a silent no-op.
func (m *Main) ReloadAdminToken() error {
	if m.server == nil {
		return errors.New("not running")
	}
	if m.AdminTokenFile == "" {
		return errors.New("no --admin-token-file: a token given by flag or environment changes only with a restart")
	}
	token, err := readAdminToken(m.AdminTokenFile)
	if err != nil {
		return err
	}
	if err := m.checkAdminToken(token); err != nil {
		return err
	}
	if err := m.server.SetAdminToken(token); err != nil {
		return err
	}
	m.AdminToken = token
	return nil
}

// checkAdminToken refuses a guessable admin token, at start and on a
// reload alike.
func (m *Main) checkAdminToken(token string) error {
	if token != "" && len(token) < MinAdminToken && !m.InsecureShortAdminToken {
		return fmt.Errorf("the admin token is %d bytes, under %d: anyone who can guess it manages the server; make one with `openssl rand -hex 32`, or pass --insecure-short-admin-token", len(token), MinAdminToken)
	}
	return nil
}

// readAdminToken reads an admin token file: one token, white space around
// it ignored, never empty.
func readAdminToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--admin-token-file: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" || strings.ContainsAny(token, " \t\r\n") {
		return "", fmt.Errorf("--admin-token-file %s: want one token, no white space inside", path)
	}
	return token, nil
}

// splitList splits a comma-separated flag value, dropping empty parts.
func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseCommandFlags parses the flags of a subcommand that takes no
// arguments. When the subcommand is not to run, ok is false and code is
// its exit status: 0 after --help, 2 for a bad flag or an argument.
func parseCommandFlags(fs *flag.FlagSet, args []string, stderr io.Writer) (code int, ok bool) {
	if err := fs.Parse(args); err == flag.ErrHelp {
		return 0, false
	} else if err != nil {
		return 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return 2, false
	}
	return 0, true
}
