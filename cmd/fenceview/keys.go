package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fenceview/fenceview/client"
)

// runKeys is `fenceview keys create|list|revoke`: it manages the API keys
// of a running server through its API, with the admin token. (Not offline
// against the database: the server caches keys, so a key revoked behind
// its back would keep working until a restart.)
const keysUsage = `Usage: fenceview keys create --name NAME --role viewer|client|guard|admin [--resource PREFIX]...
       fenceview keys list
       fenceview keys revoke ID
Common flags: --server URL (default http://127.0.0.1:8080), --admin-token (or env FENCEVIEW_ADMIN_TOKEN),
              --tls-ca FILE (trust this CA for an https server), --tls-cert FILE --tls-key FILE
              (a client certificate, for a server with --tls-client-ca), --json`

// keysCommand is what one `fenceview keys` command line asks for.
type keysCommand struct {
	verb, id                  string // id: revoke's
	server, admin             string
	caFile, certFile, keyFile string
	asJSON                    bool
	name, role                string // create's
	prefixes                  []string
	args                      []string // left after the flags
}

func runKeys(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	usage := func() { fmt.Fprintln(stderr, keysUsage) }
	if len(args) == 0 {
		usage()
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage()
		return 0
	}
	k, err := parseKeys(args, stderr, usage)
	if err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if k.admin == "" {
		fmt.Fprintln(stderr, "fenceview keys: the admin token is required (--admin-token or FENCEVIEW_ADMIN_TOKEN)")
		return 2
	}
	c, err := k.client()
	if err != nil {
		fmt.Fprintln(stderr, "fenceview keys:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var run func(context.Context, *client.Client, io.Writer) error
	switch {
	case k.verb == "create" && k.name != "" && k.role != "" && len(k.args) == 0:
		run = k.create
	case k.verb == "list":
		run = k.list
	case k.verb == "revoke" && k.takeRevokeID():
		run = k.revoke
	default:
		usage()
		return 2
	}
	if err := run(ctx, c, stdout); err != nil {
		fmt.Fprintln(stderr, "fenceview keys:", err)
		return 1
	}
	return 0
}

// parseKeys reads a keys command line: the verb, then flags (revoke's id
// may come before the flags or after them).
func parseKeys(args []string, stderr io.Writer, usage func()) (*keysCommand, error) {
	k := &keysCommand{verb: args[0]}
	args = args[1:]
	if k.verb == "revoke" && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		k.id, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("fenceview keys "+k.verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = usage
	fs.StringVar(&k.server, "server", "http://127.0.0.1:8080", "base URL of the running server")
	fs.StringVar(&k.admin, "admin-token", os.Getenv("FENCEVIEW_ADMIN_TOKEN"), "the server's admin token (env FENCEVIEW_ADMIN_TOKEN)")
	fs.StringVar(&k.caFile, "tls-ca", "", "PEM file of the CA that signed the server's certificate")
	fs.StringVar(&k.certFile, "tls-cert", "", "client certificate (PEM) for a server with --tls-client-ca; with --tls-key")
	fs.StringVar(&k.keyFile, "tls-key", "", "the private key of --tls-cert (PEM)")
	fs.BoolVar(&k.asJSON, "json", false, "print JSON")
	fs.StringVar(&k.name, "name", "", "create: a name for the key (who or what uses it)")
	fs.StringVar(&k.role, "role", "", "create: viewer, client, guard or admin")
	fs.Func("resource", "create: limit the key to resource ids with this prefix (repeatable)", func(v string) error {
		k.prefixes = append(k.prefixes, v)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	k.args = fs.Args()
	return k, nil
}

// client is an admin client of the server, over TLS as the flags say.
func (k *keysCommand) client() (*client.Client, error) {
	cfg := client.Config{URL: k.server, AdminToken: k.admin}
	if k.caFile != "" || k.certFile != "" || k.keyFile != "" {
		tc := &tls.Config{}
		if k.caFile != "" {
			pem, err := os.ReadFile(k.caFile)
			if err != nil {
				return nil, err
			}
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("no PEM certificate in %s", k.caFile)
			}
		}
		if k.certFile != "" || k.keyFile != "" {
			cert, err := tls.LoadX509KeyPair(k.certFile, k.keyFile)
			if err != nil {
				return nil, fmt.Errorf("--tls-cert and --tls-key: %w", err)
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		cfg.HTTPClient = &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
	}
	return client.New(cfg)
}

func (k *keysCommand) create(ctx context.Context, c *client.Client, stdout io.Writer) error {
	key, err := c.CreateKey(ctx, k.name, k.role, k.prefixes)
	if err != nil {
		return err
	}
	if k.asJSON {
		return json.NewEncoder(stdout).Encode(key)
	}
	_, err = fmt.Fprintf(stdout, "id:        %s\nname:      %s\nrole:      %s\nresources: %s\nsecret:    %s\n\nThe secret is shown once: the server keeps only its hash.\n",
		key.ID, key.Name, key.Role, prefixText(key.Resources), key.Secret)
	return err
}

func (k *keysCommand) list(ctx context.Context, c *client.Client, stdout io.Writer) error {
	keys, err := c.Keys(ctx)
	if err != nil {
		return err
	}
	if k.asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{"keys": keys})
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tROLE\tRESOURCES\tCREATED")
	for _, key := range keys {
		fmt.Fprintf(tw, "%s\t%q\t%s\t%s\t%s\n", key.ID, key.Name, key.Role, prefixText(key.Resources), key.CreatedAt.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}

// takeRevokeID reports whether revoke has its one id, before the flags
// or after them.
func (k *keysCommand) takeRevokeID() bool {
	if k.id == "" && len(k.args) == 1 {
		k.id, k.args = k.args[0], nil
	}
	return k.id != "" && len(k.args) == 0
}

func (k *keysCommand) revoke(ctx context.Context, c *client.Client, stdout io.Writer) error {
	if err := c.RevokeKey(ctx, k.id); err != nil {
		return err
	}
	_, err := fmt.Fprintf(stdout, "revoked %s\n", k.id)
	return err
}

func prefixText(p []string) string {
	if len(p) == 0 {
		return "(all)"
	}
	q := make([]string, len(p))
	for i, s := range p {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, " ")
}
