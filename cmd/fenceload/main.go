// Command fenceload puts a fenceview server under load and checks it while
// doing so: N clients over R resources run grant cycles (acquire, then
// release with the token), fenced writes, or a mix with stale writes, for a
// duration. It prints operations per second and latency (mean, p50, p99,
// max) per kind, and fails (exit status 1) if any granted token is not
// strictly above the previous one of its resource, a stale token is
// accepted, a current one refused without grants running, or the server
// answers 5xx or fails a request.
//
//	fenceload -url http://127.0.0.1:8080 -clients 64 -resources 1024 -duration 10s -mix grant
//	fenceload -mix fence -json fence.json
//	fenceload -mix grant=45,fence=45,stale=10
//	fenceload -transport rpc   # the Go client over the multiplexed RPC stream
//	fenceload -attack 200 -duration 60s   # hostile connections (bench/soak.sh)
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/fenceview/fenceview/internal/cmdmain"
	"github.com/fenceview/fenceview/internal/load"
)

func main() { cmdmain.Main("fenceload", run) }

// flags is fenceload's command line: the load run itself (load.Config),
// the server and how requests reach it, and the attack mode.
type flags struct {
	load.Config
	url, key, transport, jsonOut string
	attack                       int // hostile connections instead of honest clients
	attackFrom, viewerKey        string
}

// parseFlags reads the command line; -h prints the usage on stdout, and
// every mistake in it is a usage error.
func parseFlags(args []string, stdout io.Writer) (*flags, error) {
	fs := flag.NewFlagSet("fenceload", flag.ContinueOnError)
	fs.SetOutput(stdout)
	var f flags
	fs.StringVar(&f.url, "url", "http://127.0.0.1:8080", "fenceview server")
	fs.IntVar(&f.Clients, "clients", 64, "concurrent clients, each with its own keep-alive connection")
	fs.IntVar(&f.Resources, "resources", 1024, "resources the clients pick from at random")
	fs.DurationVar(&f.Duration, "duration", 10*time.Second, "measured time")
	fs.DurationVar(&f.Warmup, "warmup", time.Second, "time run before measuring (its tokens are checked too)")
	mix := fs.String("mix", "grant", "operations: grant (acquire+release cycles), fence (fenced writes with the current token), mixed (grant=45,fence=45,stale=10) or kind=weight,...")
	fs.DurationVar(&f.Lease, "lease", 30*time.Second, "lease of every grant")
	fs.DurationVar(&f.Wait, "wait", 0, "how long acquire waits server-side for a held lock (0: a held lock counts as busy and the client moves on)")
	fs.StringVar(&f.Prefix, "prefix", "", "resource id prefix (default: load-<random>, fresh resources every run)")
	fs.Uint64Var(&f.Seed, "seed", 1, "seed of the clients' choices of resource and operation")
	fs.StringVar(&f.jsonOut, "json", "", "also write the report as JSON to this file")
	fs.StringVar(&f.key, "key", os.Getenv("FENCEVIEW_KEY"), "API key (client role) for a server with auth on (env FENCEVIEW_KEY)")
	fs.IntVar(&f.ServerPID, "server-pid", 0, "the server's process id, when it runs on this machine: the report adds its CPU time per operation (Linux)")
	fs.IntVar(&f.attack, "attack", 0, "instead of honest clients, run this many hostile connections for -duration (slow RPC and event readers, floods, made-up methods, login storms): the attack half of bench/soak.sh")
	fs.StringVar(&f.attackFrom, "attack-from", "", "with -attack: the local address the hostile connections come from (e.g. 127.0.0.2), so the server's per-address limits tell them from the honest clients")
	fs.StringVar(&f.viewerKey, "viewer-key", os.Getenv("FENCEVIEW_VIEWER_KEY"), "with -attack: a viewer key for the login storm (env FENCEVIEW_VIEWER_KEY)")
	fs.StringVar(&f.transport, "transport", "http", "how requests are sent: http (hand-built JSON API requests, one keep-alive connection per client), client (the Go client over HTTP) or rpc (the Go client over the RPC stream, one multiplexed websocket)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: fenceload [flags]\n\nLoad a fenceview server and check its tokens.\n\n")
		fs.PrintDefaults()
	}
	if err := cmdmain.Parse(fs, args); err != nil {
		return nil, err
	}
	if f.attack > 0 {
		return &f, nil // the attack sends no operations: -mix and the sizes do not apply
	}
	var err error
	if f.Mix, err = load.ParseMix(*mix); err != nil {
		return nil, cmdmain.Usage(err)
	}
	if f.Clients < 1 || f.Resources < 1 || f.Duration <= 0 || f.Warmup < 0 || f.ServerPID < 0 {
		return nil, cmdmain.Usage(errors.New("-clients and -resources must be at least 1, -duration positive, -server-pid not negative"))
	}
	if f.Prefix == "" {
		var b [4]byte
		rand.Read(b[:])
		f.Prefix = "load-" + hex.EncodeToString(b[:])
	}
	return &f, nil
}

// run is the whole command, so tests can run it against an in-process
// server. It returns an error when the run failed its checks, after
// printing (and writing) the report.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	f, err := parseFlags(args, stdout)
	if err != nil {
		return err
	}
	if f.attack > 0 {
		return runAttack(ctx, f.url, f.key, f.viewerKey, f.attackFrom, f.attack, f.Duration, stdout)
	}
	var drv load.Driver
	switch f.transport {
	case "http":
		var h *load.HTTP
		if h, err = load.NewHTTP(f.url); err == nil {
			h.Key, drv = f.key, h
		}
	case "client", "rpc":
		var g *load.GoClient
		if g, err = load.NewGoClient(f.url, f.transport == "rpc"); err == nil {
			g.Key, drv = f.key, g
		}
	default:
		err = fmt.Errorf("-transport %q: want http, client or rpc", f.transport)
	}
	if err != nil {
		return cmdmain.Usage(err)
	}
	defer drv.Close()
	rep, err := load.Run(ctx, f.Config, drv)
	if err != nil {
		return err
	}
	load.Print(stdout, rep)
	if f.jsonOut != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(f.jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return rep.Err()
}
