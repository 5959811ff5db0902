package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/internal/server"
	"github.com/fenceview/fenceview/internal/servertest"
)

type pki struct {
	caPEM             []byte
	pool              *x509.CertPool
	ca                *x509.Certificate
	caKey             *ecdsa.PrivateKey
	certFile, keyFile string
	caFile            string
	clientCert        tls.Certificate
}

// newPKI makes a CA, a server certificate for 127.0.0.1 and a client
// certificate, all in the test.
func newPKI(t *testing.T) *pki {
	t.Helper()
	dir := t.TempDir()
	p := &pki{}
	var err error
	p.caKey, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fenceview test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &p.caKey.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	p.ca, _ = x509.ParseCertificate(der)
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	p.pool = x509.NewCertPool()
	p.pool.AddCert(p.ca)
	p.caFile = filepath.Join(dir, "ca.pem")
	os.WriteFile(p.caFile, p.caPEM, 0o600)

	certPEM, keyPEM := p.issue(t, 2, &x509.Certificate{
		Subject: pkix.Name{CommonName: "127.0.0.1"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	p.certFile, p.keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(p.certFile, certPEM, 0o600)
	os.WriteFile(p.keyFile, keyPEM, 0o600)
	cc, ck := p.issue(t, 3, &x509.Certificate{Subject: pkix.Name{CommonName: "worker"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if p.clientCert, err = tls.X509KeyPair(cc, ck); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *pki) issue(t *testing.T, serial int64, tmpl *x509.Certificate) (certPEM, keyPEM []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl.SerialNumber = big.NewInt(serial)
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kd, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})
}

func (p *pki) httpClient(withCert bool) *http.Client {
	tc := &tls.Config{RootCAs: p.pool}
	if withCert {
		tc.Certificates = []tls.Certificate{p.clientCert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
}

// --tls-cert/--tls-key serve HTTPS and WSS; the Go client works over both,
// its RPC stream included.
func TestTLS(t *testing.T) {
	p := newPKI(t)
	s := servertest.Start(t, server.Config{AdminToken: admin, Access: server.Access{TLSCert: p.certFile, TLSKey: p.keyFile}})
	if !strings.HasPrefix(s.URL(), "https://") {
		t.Fatalf("URL %s", s.URL())
	}
	hc := p.httpClient(false)
	if a := call(t, hc, "POST", s.URL()+"/v1/locks/r/acquire", admin, acquireBody("h")); a.Status != 200 {
		t.Fatalf("https acquire: %d %s", a.Status, a.Raw)
	}
	// Plain HTTP on the TLS port gets nowhere.
	if res, err := http.Get("http://" + strings.TrimPrefix(s.URL(), "https://") + "/healthz"); err == nil && res.StatusCode == 200 {
		t.Fatal("plain HTTP served on the TLS port")
	}
	d := websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: p.pool}}
	ws, _, err := d.Dial("wss"+strings.TrimPrefix(s.URL(), "https")+"/v1/events?since=0", http.Header{"Authorization": {"Bearer " + admin}})
	if err != nil {
		t.Fatalf("wss: %v", err)
	}
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(10 * time.Second)) // hang guard
	var e map[string]any
	if err := ws.ReadJSON(&e); err != nil || e["type"] != "grant" {
		t.Fatalf("wss event: %v %v", e, err)
	}
	_, key := newKeyTLS(t, s, hc)
	c, err := client.New(client.Config{URL: s.URL(), HTTPClient: hc, Key: key, RPC: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Fence(context.Background(), "f", 3); err != nil {
		t.Fatalf("client over wss rpc: %v", err)
	}
}

func newKeyTLS(t *testing.T, s *servertest.Server, hc *http.Client) (string, string) {
	a := call(t, hc, "POST", s.URL()+"/v1/auth/keys", admin, map[string]any{"name": "w", "role": "client"})
	if a.Status != 201 {
		t.Fatalf("create key over https: %d %s", a.Status, a.Raw)
	}
	return a.Body["id"].(string), a.Body["secret"].(string)
}

// --tls-client-ca: no certificate signed by that CA, no connection.
func TestTLSClientCertificates(t *testing.T) {
	p := newPKI(t)
	s := servertest.Start(t, server.Config{AdminToken: admin, Access: server.Access{TLSCert: p.certFile, TLSKey: p.keyFile, TLSClientCA: p.caFile}})
	req, _ := http.NewRequest("GET", s.URL()+"/healthz", nil)
	if res, err := p.httpClient(false).Do(req); err == nil {
		res.Body.Close()
		t.Fatal("served a client without a certificate")
	}
	if a := call(t, p.httpClient(true), "GET", s.URL()+"/v1/resources", admin, nil); a.Status != 200 {
		t.Fatalf("with a client certificate: %d %s", a.Status, a.Raw)
	}
	d := websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: p.pool}}
	if _, _, err := d.Dial("wss"+strings.TrimPrefix(s.URL(), "https")+"/v1/events", http.Header{"Authorization": {"Bearer " + admin}}); err == nil {
		t.Fatal("wss without a client certificate")
	}
	// Bad files: a clear error, no server.
	for _, a := range []server.Access{{TLSCert: p.certFile}, {TLSCert: p.certFile, TLSKey: p.caFile}, {TLSCert: p.certFile, TLSKey: p.keyFile, TLSClientCA: p.keyFile}} {
		if _, err := servertest.TryStart(t, server.Config{Access: a}); err == nil || !strings.Contains(err.Error(), "tls") {
			t.Fatalf("%+v: %v", a, err)
		}
	}
}
