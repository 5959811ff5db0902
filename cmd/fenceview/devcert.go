package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Files written by `fenceview dev-cert`, in --dir.
const (
	devCA         = "ca.pem"
	devServerCert = "cert.pem"
	devServerKey  = "key.pem"
	devClientCert = "client.pem"
	devClientKey  = "client-key.pem"
)

// runDevCert is `fenceview dev-cert`: a throwaway CA, a server certificate
// for the local names and a client certificate, to try --tls-cert and
// --tls-client-ca on one machine. Not for production: the CA's key is not
// kept, so nothing more can be signed with it.
func runDevCert(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fenceview dev-cert", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", ".", "directory to write the files to (created if missing)")
	valid := fs.Duration("valid", 30*24*time.Hour, "how long the certificates are valid")
	hosts := []string{"127.0.0.1", "::1", "localhost"}
	hostsSet := false
	fs.Func("host", "a name or IP address the server certificate is for (repeatable; default 127.0.0.1, ::1, localhost)", func(v string) error {
		if !hostsSet {
			hosts, hostsSet = nil, true
		}
		if v == "" || strings.ContainsAny(v, " \t/,") {
			return fmt.Errorf("%q is not a host name or IP address", v)
		}
		hosts = append(hosts, v)
		return nil
	})
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: fenceview dev-cert [--dir .] [--host NAME]... [--valid 720h]\n\n"+
			"Makes a CA (%s), a server certificate and key (%s, %s) and a client certificate and key (%s, %s),\n"+
			"for trying TLS and mTLS on one machine; keys are written 0600, existing files are never overwritten.\n"+
			"Not for production: the CA's key is not kept.\n\n", devCA, devServerCert, devServerKey, devClientCert, devClientKey)
		fs.PrintDefaults()
	}
	if code, ok := parseCommandFlags(fs, args, stderr); !ok {
		return code
	}
	if *valid < time.Hour || *valid > 825*24*time.Hour {
		fmt.Fprintln(stderr, "fenceview dev-cert: --valid must be from 1h to 825 days")
		return 2
	}
	files, err := devCerts(hosts, time.Now(), *valid)
	if err == nil {
		err = writeNew(*dir, files)
	}
	if err != nil {
		fmt.Fprintln(stderr, "fenceview dev-cert:", err)
		return 1
	}
	d := *dir
	fmt.Fprintf(stdout, "wrote %s, %s, %s, %s, %s in %s (server certificate for %s)\n\n"+
		"TLS:   fenceview --tls-cert %s --tls-key %s\n"+
		"       curl --cacert %s https://127.0.0.1:8080/healthz\n"+
		"mTLS:  fenceview --tls-cert %s --tls-key %s --tls-client-ca %s\n"+
		"       curl --cacert %s --cert %s --key %s https://127.0.0.1:8080/healthz\n",
		devCA, devServerCert, devServerKey, devClientCert, devClientKey, d, strings.Join(hosts, ", "),
		filepath.Join(d, devServerCert), filepath.Join(d, devServerKey), filepath.Join(d, devCA),
		filepath.Join(d, devServerCert), filepath.Join(d, devServerKey), filepath.Join(d, devCA),
		filepath.Join(d, devCA), filepath.Join(d, devClientCert), filepath.Join(d, devClientKey))
	return 0
}

type pemFile struct {
	name string
	data []byte
	mode os.FileMode
}

// devCerts makes the CA and the two certificates signed by it.
func devCerts(hosts []string, now time.Time, valid time.Duration) ([]pemFile, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		Subject:   pkix.Name{CommonName: "fenceview dev-cert CA"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(valid),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, ca, err := sign(caTmpl, nil, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	files := []pemFile{{devCA, pemBlock("CERTIFICATE", caDER), 0o644}}
	leaf := func(tmpl *x509.Certificate, certName, keyName string) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Minute), now.Add(valid)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		der, _, err := sign(tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		kd, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return err
		}
		files = append(files, pemFile{certName, pemBlock("CERTIFICATE", der), 0o644}, pemFile{keyName, pemBlock("PRIVATE KEY", kd), 0o600})
		return nil
	}
	server := &x509.Certificate{Subject: pkix.Name{CommonName: hosts[0]}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			server.IPAddresses = append(server.IPAddresses, ip)
		} else {
			server.DNSNames = append(server.DNSNames, h)
		}
	}
	if err := leaf(server, devServerCert, devServerKey); err != nil {
		return nil, err
	}
	client := &x509.Certificate{Subject: pkix.Name{CommonName: "fenceview dev-cert client"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if err := leaf(client, devClientCert, devClientKey); err != nil {
		return nil, err
	}
	return files, nil
}

// sign makes a certificate of tmpl with a random serial, signed by parent
// (tmpl itself when nil).
func sign(tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, signer *ecdsa.PrivateKey) ([]byte, *x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial
	if parent == nil {
		parent = tmpl
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return der, cert, err
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// writeNew writes every file or none: it refuses when any exists, so a
// second run never replaces certificates a server is using.
func writeNew(dir string, files []pemFile) error {
	for _, f := range files {
		if _, err := os.Lstat(filepath.Join(dir, f.name)); err == nil {
			return fmt.Errorf("%s exists; remove it or choose another --dir", filepath.Join(dir, f.name))
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		// O_EXCL: the mode is set on creation, never on a file someone else made.
		out, err := os.OpenFile(filepath.Join(dir, f.name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, f.mode)
		if err != nil {
			return err
		}
		_, err = out.Write(f.data)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}
