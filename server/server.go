// Package server runs a whole fenceview server inside a Go program: the
// SQLite record, the lock authority, the JSON API, the RPC and event
// streams and the dashboard, on one address, from a Config. It is what the
// fenceview command runs.
//
//	srv, err := server.Start(ctx, server.Config{Addr: "127.0.0.1:0", DBPath: "fenceview.db"})
//	if err != nil { ... }
//	defer srv.Close()
//	c, err := client.New(client.Config{URL: srv.URL()})
package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/server"
)

// Config says where and how to serve. The zero value of every field but
// DBPath is a working default.
type Config struct {
	// Addr is the listening address, e.g. 127.0.0.1:8080, or 127.0.0.1:0
	// for any free port (URL then says which). Empty: 127.0.0.1:0.
	Addr string
	// DBPath is the SQLite file, created on first start. Required. One
	// server at a time may open it.
	DBPath string
	// Issuer is the issuer id written into tokens; empty: the id kept in
	// the database (a new one on first start).
	Issuer string
	// AdminToken turns auth on: admin routes and the dashboard want it,
	// and API keys may be made with it. Empty: auth off, which Start
	// refuses beyond loopback unless InsecureNoAuth is set.
	AdminToken     string
	InsecureNoAuth bool
	// AllowedHosts are extra Host header values accepted with auth off.
	AllowedHosts []string
	// TLSCert and TLSKey serve HTTPS and WSS; TLSClientCA also requires
	// client certificates signed by that CA.
	TLSCert, TLSKey, TLSClientCA string
	// DashboardAdmin offers force-expire and reset on the dashboard with
	// auth off (with auth on, admin sessions always get them).
	DashboardAdmin bool
	// SigningKeyFile signs grants with this PEM Ed25519 key instead of the
	// keys kept in the database. RequireSignatures: the server's own
	// fence refuses unsigned tokens.
	SigningKeyFile    string
	RequireSignatures bool
	// UnsignedGrants issues grants without a signature (the command's
	// --signing=off), for guards that never verify one; refused with
	// RequireSignatures.
	UnsignedGrants bool
	// FenceMode is the least mode of the server's fence:
	// fenceview.FenceModeMark (or empty) or fenceview.FenceModeCurrent.
	FenceMode string
	// History bounds the event history, pruned in the background (zero:
	// keep every event).
	History fenceview.Retention
	// Limits; zero takes the defaults.
	MaxResources   int
	MaxWaiters     int
	MaxWebsockets  int
	RequestTimeout time.Duration
	// Clock runs leases; nil is the wall clock. Tests may drive one by
	// hand so no lease test sleeps.
	Clock fenceview.Clock
	// Logger receives the server's log, AccessLog one line per answered
	// request; nil discards them.
	Logger    *slog.Logger
	AccessLog *slog.Logger
}

// Server is a running fenceview server.
type Server struct {
	s *server.Server
}

// Start opens the database, starts the lock authority and serves HTTP in
// the background. It returns once the server is listening; ctx bounds the
// start only.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.DBPath == "" {
		return nil, fenceview.Errorf(fenceview.EINVALID, "server: Config.DBPath is required")
	}
	s, err := server.Start(ctx, server.Config{
		Addr: cfg.Addr, DBPath: cfg.DBPath, Issuer: cfg.Issuer, AdminToken: cfg.AdminToken,
		DashboardAdmin: cfg.DashboardAdmin, SigningKeyFile: cfg.SigningKeyFile, RequireSignatures: cfg.RequireSignatures, UnsignedGrants: cfg.UnsignedGrants,
		FenceMode: cfg.FenceMode, Clock: cfg.Clock, Logger: cfg.Logger, AccessLog: cfg.AccessLog,
		Access: server.Access{InsecureNoAuth: cfg.InsecureNoAuth, AllowedHosts: cfg.AllowedHosts,
			TLSCert: cfg.TLSCert, TLSKey: cfg.TLSKey, TLSClientCA: cfg.TLSClientCA},
		Limits: server.Limits{MaxResources: cfg.MaxResources, MaxWaiters: cfg.MaxWaiters, MaxWebsockets: cfg.MaxWebsockets,
			RequestTimeout: cfg.RequestTimeout, History: cfg.History},
	})
	if err != nil {
		return nil, err
	}
	return &Server{s: s}, nil
}

// URL is the base URL the server answers on, e.g. http://127.0.0.1:8080.
func (s *Server) URL() string { return s.s.URL() }

// Issuer is the issuer id the server's tokens carry.
func (s *Server) Issuer() string { return s.s.IssuerID }

// SetAdminToken replaces the admin token of a running server with auth
// on: the old one authenticates nothing from its return, and its streams
// and sessions end.
func (s *Server) SetAdminToken(token string) error { return s.s.SetAdminToken(token) }

// Close stops serving: waiters and streams end first, then requests in
// flight finish, then the database closes. It may be called more than once.
func (s *Server) Close() error { return s.s.Close() }
