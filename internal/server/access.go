package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/fenceview/fenceview/internal/auth"
)

// Dashboard sessions: enough for every person of a large team on a few
// browsers each; the oldest ends first when a flood of logins fills it.
const (
	maxSessions = 10_000
	sessionTTL  = 12 * time.Hour
)

// newSessions is the dashboard's session table, with the throttle of
// logins and bad credentials the API shares.
func newSessions(k *auth.Keyring, cfg Config) *auth.Sessions {
	s := auth.NewSessions(k, maxSessions, sessionTTL, cfg.Clock.Now)
	s.Throttle = auth.NewThrottle(cfg.Clock.Now)
	return s
}

// Access is who may connect and how.
type Access struct {
	// InsecureNoAuth allows a non-loopback address without an admin token.
	InsecureNoAuth bool
	// AllowedHosts are extra Host header values accepted with auth off
	// (--allowed-host): a name alone allows it on any port.
	AllowedHosts []string
	// TLSCert and TLSKey serve HTTPS and WSS; TLSClientCA also requires
	// client certificates signed by that CA.
	TLSCert, TLSKey, TLSClientCA string
}

// errNoAuth is Start's refusal to serve a non-loopback address without an
// admin token.
var errNoAuth = errors.New("refusing to listen beyond loopback without --admin-token (anyone who can reach the port could take and release every lock); set --admin-token or FENCEVIEW_ADMIN_TOKEN, or pass --insecure-no-auth")

// CheckAddr refuses addr when it reaches beyond loopback and auth is off.
// A host name counts as loopback only when every address it resolves to is.
func CheckAddr(addr, adminToken string, insecure bool) error {
	if adminToken != "" || insecure {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if host == "" { // every interface
		return errNoAuth
	}
	if ip := net.ParseIP(host); ip != nil {
		if ip.IsLoopback() {
			return nil
		}
		return errNoAuth
	}
	ips, err := net.LookupIP(host)
	if err != nil || len(ips) == 0 {
		return errNoAuth
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return errNoAuth
		}
	}
	return nil
}

// listen opens the listener, under TLS when configured.
func (s *Server) listen(cfg Config) (net.Listener, error) {
	if err := CheckAddr(cfg.Addr, cfg.AdminToken, cfg.InsecureNoAuth); err != nil {
		return nil, err
	}
	var tc *tls.Config
	if cfg.TLSCert != "" || cfg.TLSKey != "" || cfg.TLSClientCA != "" {
		if cfg.TLSCert == "" || cfg.TLSKey == "" {
			return nil, errors.New("--tls-cert and --tls-key go together")
		}
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("loading --tls-cert/--tls-key: %w", err)
		}
		tc = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		if cfg.TLSClientCA != "" {
			pem, err := os.ReadFile(cfg.TLSClientCA)
			if err != nil {
				return nil, fmt.Errorf("reading --tls-client-ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--tls-client-ca %s: no PEM certificate in it", cfg.TLSClientCA)
			}
			tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
		}
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil || tc == nil {
		return ln, err
	}
	s.tls = true
	return tls.NewListener(ln, tc), nil
}
