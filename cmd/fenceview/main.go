// Command fenceview is the fenceview server: it issues leases and fencing
// tokens, guards fenced writes, keeps the history in SQLite and streams it
// live to its dashboard and to anyone else who asks.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/fenceview/fenceview/dashboard"
	"github.com/fenceview/fenceview/httpapi"
	"github.com/fenceview/fenceview/internal/clock"
	"github.com/fenceview/fenceview/internal/demo"
	"github.com/fenceview/fenceview/issuer"
	"github.com/fenceview/fenceview/sqlite"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	m := NewMain()
	if err := m.ParseFlags(os.Args[1:]); err == flag.ErrHelp {
		os.Exit(0)
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "fenceview:", err)
		os.Exit(2)
	}
	if err := m.Run(ctx); err != nil {
		m.Logger.Error("fenceview could not start", "err", err)
		os.Exit(1)
	}
	<-ctx.Done()
	stop() // a second signal kills at once
	m.Logger.Info("shutting down")
	if err := m.Close(); err != nil {
		m.Logger.Error("shutdown", "err", err)
		os.Exit(1)
	}
}

// Main is the whole program, so tests can start the real server on
// 127.0.0.1:0 with a temporary database.
type Main struct {
	Addr       string
	DBPath     string
	Issuer     string
	AdminToken string
	Demo       bool // also run simulated clients (internal/demo)

	Clock  clock.Clock
	Logger *slog.Logger

	DB      *sqlite.DB
	Service *issuer.Service
	API     *httpapi.Server

	ln     net.Listener
	server *http.Server
	demo   *demo.Sim
}

// NewMain returns a Main with the defaults of the command.
func NewMain() *Main {
	return &Main{
		Addr:   "127.0.0.1:8080",
		DBPath: "fenceview.db",
		Clock:  clock.Real{},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
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
	fs.BoolVar(&m.Demo, "demo", m.Demo, "also run simulated clients, so the dashboard has something to show (database fenceview-demo.db unless --db is given)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: fenceview [flags]\n\nIssues fencing tokens, guards fenced writes and shows them live.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	// Simulated history stays out of a real database unless asked for.
	dbSet := false
	fs.Visit(func(f *flag.Flag) { dbSet = dbSet || f.Name == "db" })
	if m.Demo && !dbSet {
		m.DBPath = "fenceview-demo.db"
	}
	return nil
}

// Run opens the database, starts the lock service and serves HTTP in the
// background. It returns once the server is listening.
func (m *Main) Run(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			m.Close()
		}
	}()
	if m.DB, err = sqlite.Open(ctx, m.DBPath); err != nil {
		return err
	}
	issuerID, err := m.DB.Issuer(ctx, m.Issuer)
	if err != nil {
		return fmt.Errorf("reading issuer id: %w", err)
	}
	resources, err := m.DB.Resources(ctx)
	if err != nil {
		return fmt.Errorf("loading resources: %w", err)
	}
	lastSeq, err := m.DB.MaxSeq(ctx)
	if err != nil {
		return fmt.Errorf("loading history: %w", err)
	}
	m.Service = issuer.New(m.DB, resources, lastSeq, issuer.Config{Issuer: issuerID, Clock: m.Clock, Logger: m.Logger})
	m.API = httpapi.New(m.Service, m.DB, m.Logger)
	m.API.AdminToken = m.AdminToken
	dash := dashboard.New(m.Service, m.DB, m.Clock.Now)
	dash.Logger = m.Logger
	dash.Register(m.API)

	if m.ln, err = net.Listen("tcp", m.Addr); err != nil {
		return err
	}
	m.server = &http.Server{
		Handler:           m.API,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(m.Logger.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := m.server.Serve(m.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.Logger.Error("http server", "err", err)
		}
	}()
	if m.AdminToken == "" && !isLoopback(m.ln.Addr()) {
		m.Logger.Warn("SECURITY: listening beyond loopback without --admin-token; anyone who can reach this address can force-expire locks",
			"addr", m.ln.Addr().String())
	}
	if m.Demo {
		m.demo = demo.Start(m.Service, demo.Config{Logger: m.Logger})
	}
	m.Logger.Info("fenceview ready", "url", m.URL()+"/", "db", m.DBPath, "issuer", issuerID,
		"resources", len(resources), "lastSeq", lastSeq)
	return nil
}

// URL is the base URL the server answers on, e.g. http://127.0.0.1:8080.
func (m *Main) URL() string {
	if m.ln == nil {
		return ""
	}
	addr := m.ln.Addr().(*net.TCPAddr)
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, fmt.Sprint(addr.Port))
}

// Close stops serving: waiters and streams are ended first (a waiter may
// otherwise hold shutdown for minutes), then in-flight requests finish,
// then the database closes.
func (m *Main) Close() error {
	var errs []error
	if m.demo != nil {
		m.demo.Stop() // before the service, so no simulated call meets a closed one
	}
	if m.Service != nil {
		m.Service.Close()
	}
	if m.server != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		errs = append(errs, m.server.Shutdown(ctx))
		cancel()
	} else if m.ln != nil {
		errs = append(errs, m.ln.Close())
	}
	if m.DB != nil {
		errs = append(errs, m.DB.Close())
	}
	return errors.Join(errs...)
}

func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
