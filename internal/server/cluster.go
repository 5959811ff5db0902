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

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/dashboard"
	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/cluster"
	"github.com/fenceview/fenceview/internal/httpapi"
	"github.com/fenceview/fenceview/internal/signing"
	"github.com/fenceview/fenceview/internal/sqlite"
	"github.com/fenceview/fenceview/internal/telemetry"
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
	if s.ln, err = s.listen(cfg); err != nil {
		return err
	}
	hosts := httpapi.NewHostList(s.ln.Addr().String(), append([]string{cfg.Addr}, cfg.AllowedHosts...))
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
		SigningKeys: s.Keys, RequireSignatures: cfg.RequireSignatures, UnsignedGrants: cfg.UnsignedGrants,
		MaxResources: cfg.MaxResources, MaxWaiters: cfg.MaxWaiters, RequestTimeout: cfg.RequestTimeout,
		// API keys are the cluster's, kept in etcd; dashboard sessions stay
		// this node's (in memory), the admin token is whatever each node is given.
		AdminToken: cfg.AdminToken,
		Credentials: func(k *auth.Keyring) {
			s.Credentials = k
			s.Sessions = newSessions(k, cfg)
		},
		// GET /v1/cluster, which every node answers itself, needs a viewer.
		Access: func(h http.Handler) http.Handler {
			return httpapi.Gate(s.Credentials, s.Sessions, s.Sessions.Throttle, auth.Read, h)
		},
		Serve: func(svc fenceview.Services, keys *signing.Keyring, sync func(context.Context) error) http.Handler {
			history := syncedHistory{DB: s.DB, sync: sync}
			api := httpapi.New(svc, history, cfg.Logger)
			api.SigningKeys = keys
			api.FenceMode = cfg.FenceMode
			api.Auth, api.Sessions, api.Throttle = s.Credentials, s.Sessions, s.Sessions.Throttle
			api.AllowedHosts = hosts
			// The single server's limits, per term: every term's API caps
			// its websockets and gives waits their time on top.
			api.MaxWebsockets, api.RequestTimeout = cfg.MaxWebsockets, cfg.RequestTimeout
			api.Overload = s.overload(cfg)
			// The throttle counts the clients a follower forwards for, not
			// the follower. s.Node is set before the listener serves.
			clientAddr := func(r *http.Request) string { return s.Node.ClientAddr(r) }
			api.ClientAddr = clientAddr
			api.Metrics, api.StreamLag = s.Metrics.Handler(), s.Metrics.ObserveStreamLag
			api.ObserveGrant = s.Metrics.ObserveGrant
			s.Metrics.Watch(svc) // this term's service
			dash := dashboard.New(svc, svc, history, cfg.Clock.Now)
			dash.Logger = cfg.Logger
			dash.Sessions, dash.ClientAddr = s.Sessions, clientAddr
			dash.Keys, dash.AdminWithoutAuth = s.Credentials, cfg.DashboardAdmin
			dash.Cluster = s.clusterView
			dash.Gatherer = s.Metrics.Registry
			dash.Register(api)
			return api
		},
	})
	if err != nil {
		return err
	}
	s.IssuerID = s.Node.Issuer()
	s.http = &http.Server{
		Handler:           telemetry.Instrument(s.Node, s.Metrics, cfg.AccessLog),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		// As a single server's: a body sent a byte at a time, or an answer
		// nobody reads, ends with the request timeout.
		ReadTimeout:  cfg.RequestTimeout,
		WriteTimeout: cfg.RequestTimeout,
		ErrorLog:     slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
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

// clusterView is the cluster as the dashboard shows it. s.Node is set
// before the listener serves, so every request sees it.
func (s *Server) clusterView(ctx context.Context) (dashboard.ClusterView, error) {
	st, err := s.Node.Status(ctx)
	if err != nil {
		return dashboard.ClusterView{}, err
	}
	v := dashboard.ClusterView{Self: dashboard.ClusterMember{ID: st.Self.ID, URL: st.Self.URL}}
	if st.Leader != nil {
		v.Leader = &dashboard.ClusterMember{ID: st.Leader.ID, URL: st.Leader.URL, Leader: true}
	}
	for _, m := range st.Members {
		v.Members = append(v.Members, dashboard.ClusterMember{ID: m.ID, URL: m.URL, Leader: st.Leader != nil && m.ID == st.Leader.ID})
	}
	return v, nil
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

// syncedHistory is the leader's history as its API and dashboard read it:
// every read first waits until the local copy holds every event the lock
// service has published, so it sees every acknowledged change.
type syncedHistory struct {
	*sqlite.DB
	sync func(context.Context) error
}

func (h syncedHistory) Rejections(ctx context.Context, f fenceview.RejectionFilter) ([]fenceview.Event, error) {
	if err := h.sync(ctx); err != nil {
		return nil, unavailable(err)
	}
	return h.DB.Rejections(ctx, f)
}

func (h syncedHistory) EventsAfter(ctx context.Context, after int64, resourceID string, limit int) ([]fenceview.Event, error) {
	if err := h.sync(ctx); err != nil {
		return nil, unavailable(err)
	}
	return h.DB.EventsAfter(ctx, after, resourceID, limit)
}

func (h syncedHistory) ResourceEvents(ctx context.Context, resourceID string, limit int) ([]fenceview.Event, error) {
	if err := h.sync(ctx); err != nil {
		return nil, unavailable(err)
	}
	return h.DB.ResourceEvents(ctx, resourceID, limit)
}

func unavailable(err error) error {
	return fenceview.Errorf(fenceview.EUNAVAILABLE, "history not available on this node now: %v", err)
}
