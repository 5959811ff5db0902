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
func runKeys(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	usage := func() {
		fmt.Fprintln(stderr, `Usage: fenceview keys create --name NAME --role viewer|client|guard|admin [--resource PREFIX]...
       fenceview keys list
       fenceview keys revoke ID
Common flags: --server URL (default http://127.0.0.1:8080), --admin-token (or env FENCEVIEW_ADMIN_TOKEN),
              --tls-ca FILE (trust this CA for an https server), --tls-cert FILE --tls-key FILE
              (a client certificate, for a server with --tls-client-ca), --json`)
	}
	if len(args) == 0 {
		usage()
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage()
		return 0
	}
	verb, args := args[0], args[1:]
	// The id of revoke may come before the flags or after them.
	var id string
	if verb == "revoke" && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		id, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("fenceview keys "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = usage
	server := fs.String("server", "http://127.0.0.1:8080", "base URL of the running server")
	admin := fs.String("admin-token", os.Getenv("FENCEVIEW_ADMIN_TOKEN"), "the server's admin token (env FENCEVIEW_ADMIN_TOKEN)")
	caFile := fs.String("tls-ca", "", "PEM file of the CA that signed the server's certificate")
	certFile := fs.String("tls-cert", "", "client certificate (PEM) for a server with --tls-client-ca; with --tls-key")
	keyFile := fs.String("tls-key", "", "the private key of --tls-cert (PEM)")
	asJSON := fs.Bool("json", false, "print JSON")
	name := fs.String("name", "", "create: a name for the key (who or what uses it)")
	role := fs.String("role", "", "create: viewer, client, guard or admin")
	var prefixes []string
	fs.Func("resource", "create: limit the key to resource ids with this prefix (repeatable)", func(v string) error {
		prefixes = append(prefixes, v)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if *admin == "" {
		fmt.Fprintln(stderr, "fenceview keys: the admin token is required (--admin-token or FENCEVIEW_ADMIN_TOKEN)")
		return 2
	}
	cfg := client.Config{URL: *server, AdminToken: *admin}
	if *caFile != "" || *certFile != "" || *keyFile != "" {
		tc := &tls.Config{}
		if *caFile != "" {
			pem, err := os.ReadFile(*caFile)
			if err != nil {
				fmt.Fprintln(stderr, "fenceview keys:", err)
				return 2
			}
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(pem) {
				fmt.Fprintln(stderr, "fenceview keys: no PEM certificate in", *caFile)
				return 2
			}
		}
		if *certFile != "" || *keyFile != "" {
			cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
			if err != nil {
				fmt.Fprintln(stderr, "fenceview keys: --tls-cert and --tls-key:", err)
				return 2
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		cfg.HTTPClient = &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
	}
	c, err := client.New(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "fenceview keys:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	fail := func(err error) int {
		fmt.Fprintln(stderr, "fenceview keys:", err)
		return 1
	}
	switch verb {
	case "create":
		if *name == "" || *role == "" || fs.NArg() > 0 {
			usage()
			return 2
		}
		k, err := c.CreateKey(ctx, *name, *role, prefixes)
		if err != nil {
			return fail(err)
		}
		if *asJSON {
			json.NewEncoder(stdout).Encode(k)
			return 0
		}
		fmt.Fprintf(stdout, "id:        %s\nname:      %s\nrole:      %s\nresources: %s\nsecret:    %s\n\nThe secret is shown once: the server keeps only its hash.\n",
			k.ID, k.Name, k.Role, prefixText(k.Resources), k.Secret)
	case "list":
		keys, err := c.Keys(ctx)
		if err != nil {
			return fail(err)
		}
		if *asJSON {
			json.NewEncoder(stdout).Encode(map[string]any{"keys": keys})
			return 0
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tROLE\tRESOURCES\tCREATED")
		for _, k := range keys {
			fmt.Fprintf(tw, "%s\t%q\t%s\t%s\t%s\n", k.ID, k.Name, k.Role, prefixText(k.Resources), k.CreatedAt.UTC().Format(time.RFC3339))
		}
		tw.Flush()
	case "revoke":
		if id == "" && fs.NArg() == 1 {
			id = fs.Arg(0)
		} else if id == "" || fs.NArg() > 0 {
			usage()
			return 2
		}
		if err := c.RevokeKey(ctx, id); err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "revoked %s\n", id)
	default:
		usage()
		return 2
	}
	return 0
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
