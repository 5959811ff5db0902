package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/fenceview/fenceview/cluster"
	"github.com/fenceview/fenceview/dashboard"
	"github.com/fenceview/fenceview/httpapi"
	"github.com/fenceview/fenceview/issuer"
	"github.com/fenceview/fenceview/signing"
)

// ClusterConfig is cluster mode's part of Config.
type ClusterConfig struct {
	Etcd        []string // etcd client URLs; empty: single server
	Prefix      string   // default /fenceview/
	Advertise   string   // default http://<the listen address>
	ElectionTTL time.Duration
}

// startCluster serves as one node of a cluster: the lock service runs only
// while this node leads, over etcd; otherwise requests go to the leader.
func (s *Server) startCluster(ctx context.Context, cfg Config) error {
	var err error
	if s.ln, err = net.Listen("tcp", cfg.Addr); err != nil {
		return err
	}
	advertise := cfg.Cluster.Advertise
	if advertise == "" {
		advertise = defaultAdvertise(s.ln.Addr().(*net.TCPAddr))
	}
	if cfg.SigningKeyFile != "" {
		if s.Keys, err = signing.FromFile(cfg.SigningKeyFile); err != nil {
			return err
		}
	}
	s.Node, err = cluster.Start(ctx, cluster.Config{
		Endpoints: cfg.Cluster.Etcd, Prefix: cfg.Cluster.Prefix, Advertise: advertise,
		ElectionTTL: cfg.Cluster.ElectionTTL, Issuer: cfg.Issuer, History: s.DB,
		Clock: cfg.Clock, Logger: cfg.Logger,
		SigningKeys: s.Keys, RequireSignatures: cfg.RequireSignatures,
		Serve: func(svc *issuer.Service, keys *signing.Keyring) http.Handler {
			api := httpapi.New(svc, s.DB, cfg.Logger)
			api.SigningKeys = keys
			api.AdminToken = cfg.AdminToken
			dash := dashboard.New(svc, s.DB, cfg.Clock.Now)
			dash.Logger = cfg.Logger
			dash.Register(api)
			return api
		},
	})
	if err != nil {
		return err
	}
	s.IssuerID = s.Node.Issuer()
	s.http = &http.Server{
		Handler:           s.Node,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := s.http.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			cfg.Logger.Error("http server", "err", err)
		}
	}()
	cfg.Logger.Info("fenceview ready", "url", s.URL()+"/", "db", cfg.DBPath, "issuer", s.IssuerID,
		"cluster", s.Node.Self().ID, "advertise", advertise)
	return nil
}

// defaultAdvertise is this node's URL for its peers when --advertise is not
// given: the listen address, or the host name for a wildcard address.
func defaultAdvertise(addr *net.TCPAddr) string {
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		if h, err := os.Hostname(); err == nil {
			host = h
		}
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(addr.Port))
}
