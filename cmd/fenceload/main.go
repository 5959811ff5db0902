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

// run is the whole command, so tests can run it against an in-process
// server. It returns an error when the run failed its checks, after
// printing (and writing) the report.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("fenceload", flag.ContinueOnError)
	fs.SetOutput(stdout)
	url := fs.String("url", "http://127.0.0.1:8080", "fenceview server")
	clients := fs.Int("clients", 64, "concurrent clients, each with its own keep-alive connection")
	resources := fs.Int("resources", 1024, "resources the clients pick from at random")
	duration := fs.Duration("duration", 10*time.Second, "measured time")
	warmup := fs.Duration("warmup", time.Second, "time run before measuring (its tokens are checked too)")
	mixFlag := fs.String("mix", "grant", "operations: grant (acquire+release cycles), fence (fenced writes with the current token), mixed (grant=45,fence=45,stale=10) or kind=weight,...")
	lease := fs.Duration("lease", 30*time.Second, "lease of every grant")
	wait := fs.Duration("wait", 0, "how long acquire waits server-side for a held lock (0: a held lock counts as busy and the client moves on)")
	prefix := fs.String("prefix", "", "resource id prefix (default: load-<random>, fresh resources every run)")
	seed := fs.Uint64("seed", 1, "seed of the clients' choices of resource and operation")
	jsonOut := fs.String("json", "", "also write the report as JSON to this file")
	key := fs.String("key", os.Getenv("FENCEVIEW_KEY"), "API key (client role) for a server with auth on (env FENCEVIEW_KEY)")
	serverPID := fs.Int("server-pid", 0, "the server's process id, when it runs on this machine: the report adds its CPU time per operation (Linux)")
	attackConns := fs.Int("attack", 0, "instead of honest clients, run this many hostile connections for -duration (slow RPC and event readers, floods, made-up methods, login storms): the attack half of bench/soak.sh")
	attackFrom := fs.String("attack-from", "", "with -attack: the local address the hostile connections come from (e.g. 127.0.0.2), so the server's per-address limits tell them from the honest clients")
	viewerKey := fs.String("viewer-key", os.Getenv("FENCEVIEW_VIEWER_KEY"), "with -attack: a viewer key for the login storm (env FENCEVIEW_VIEWER_KEY)")
	transport := fs.String("transport", "http", "how requests are sent: http (hand-built JSON API requests, one keep-alive connection per client), client (the Go client over HTTP) or rpc (the Go client over the RPC stream, one multiplexed websocket)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: fenceload [flags]\n\nLoad a fenceview server and check its tokens.\n\n")
		fs.PrintDefaults()
	}
	if err := cmdmain.Parse(fs, args); err != nil {
		return err
	}
	if *attackConns > 0 {
		return runAttack(ctx, *url, *key, *viewerKey, *attackFrom, *attackConns, *duration, stdout)
	}
	mix, err := load.ParseMix(*mixFlag)
	if err != nil {
		return cmdmain.Usage(err)
	}
	if *clients < 1 || *resources < 1 || *duration <= 0 || *warmup < 0 || *serverPID < 0 {
		return cmdmain.Usage(errors.New("-clients and -resources must be at least 1, -duration positive, -server-pid not negative"))
	}
	if *prefix == "" {
		var b [4]byte
		rand.Read(b[:])
		*prefix = "load-" + hex.EncodeToString(b[:])
	}
	var drv load.Driver
	switch *transport {
	case "http":
		var h *load.HTTP
		if h, err = load.NewHTTP(*url); err == nil {
			h.Key, drv = *key, h
		}
	case "client", "rpc":
		var g *load.GoClient
		if g, err = load.NewGoClient(*url, *transport == "rpc"); err == nil {
			g.Key, drv = *key, g
		}
	default:
		err = fmt.Errorf("-transport %q: want http, client or rpc", *transport)
	}
	if err != nil {
		return cmdmain.Usage(err)
	}
	defer drv.Close()
	rep, err := load.Run(ctx, load.Config{
		Clients:   *clients,
		Resources: *resources,
		Duration:  *duration,
		Warmup:    *warmup,
		Mix:       mix,
		Lease:     *lease,
		Wait:      *wait,
		Prefix:    *prefix,
		Seed:      *seed,
		ServerPID: *serverPID,
	}, drv)
	if err != nil {
		return err
	}
	load.Print(stdout, rep)
	if *jsonOut != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return rep.Err()
}
