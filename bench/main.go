// Command bench runs one workload against fenceview and its peers in one
// process, one after the other, and prints the throughput of each with the
// ratio fenceview/peer. The workload loop is fenceload's (package load):
// only the driver differs between systems. run.sh starts the peers and
// fenceview and calls it; run it by hand to compare servers already
// running:
//
//	go run . -fenceview http://127.0.0.1:8080 -redis 127.0.0.1:6379 -postgres 'host=127.0.0.1 user=postgres' -sqlite /tmp
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/fenceview/fenceview/internal/cmdmain"
	"github.com/fenceview/fenceview/internal/load"
)

func main() { cmdmain.Main("bench", run) }

// target is one system under test.
type target struct {
	label   string // column/row name
	durable string
	drv     load.Driver
	pid     int // the server's process, 0 when not known: its CPU is not measured
}

// workload is one cell row of the table.
type workload struct {
	name    string
	clients int
	mix     load.Mix
}

// cell is the measurements of one workload on one target, one per round.
type cell struct {
	Target   string         `json:"target"`
	Workload string         `json:"workload"`
	Rounds   []load.OpStats `json:"rounds"`
	CPU      []*load.CPU    `json:"cpu,omitempty"` // of each round, nil where not measured
}

// config is what the command line asks for: the systems to measure and
// how.
type config struct {
	fvURL, fvKey, fvCluster, fvFollower string
	fvRPC                               bool
	fvUnsigned, fvUnsignedKey           string
	redisAddr, redisAOF, pgDSN          string
	sqliteDir, etcdURLs                 string
	fvPID, fvUnsignedPID                int
	redisPID, redisAOFPID               int

	clients, resources int
	duration, warmup   time.Duration
	rounds             int
	single             bool
	jsonOut            string

	primitives bool
	permits    int
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&c.fvURL, "fenceview", "", "fenceview base URL (empty: skip)")
	fs.BoolVar(&c.fvRPC, "rpc", true, "also run fenceview through the Go client over its RPC stream")
	fs.StringVar(&c.fvKey, "fenceview-key", os.Getenv("FENCEVIEW_KEY"), "API key (role client) for a fenceview with auth on (env FENCEVIEW_KEY)")
	fs.StringVar(&c.redisAddr, "redis", "", "Redis without persistence, host:port (empty: skip)")
	fs.StringVar(&c.redisAOF, "redis-aof", "", "Redis with appendfsync always, host:port (empty: skip)")
	fs.StringVar(&c.pgDSN, "postgres", "", "PostgreSQL connection string, fsync on (empty: skip)")
	fs.StringVar(&c.sqliteDir, "sqlite", "", "directory for the SQLite baseline's database (empty: skip)")
	fs.StringVar(&c.fvCluster, "fenceview-cluster", "", "the leader of a fenceview cluster, base URL (empty: skip)")
	fs.StringVar(&c.fvFollower, "fenceview-follower", "", "a follower of that cluster, base URL (empty: skip)")
	fs.StringVar(&c.etcdURLs, "etcd", "", "etcd client URLs, comma-separated, for etcd's own concurrency.Mutex (empty: skip)")
	fs.IntVar(&c.clients, "clients", 64, "clients of the concurrent workloads")
	fs.IntVar(&c.resources, "resources", 1024, "resources")
	fs.DurationVar(&c.duration, "duration", 5*time.Second, "measured time per cell")
	fs.DurationVar(&c.warmup, "warmup", time.Second, "warm-up per cell")
	fs.IntVar(&c.rounds, "rounds", 1, "rounds; each cell reports the median and the spread")
	fs.BoolVar(&c.single, "single", true, "also run every workload with 1 client")
	fs.StringVar(&c.jsonOut, "json", "", "write every measurement as JSON to this file")
	fs.StringVar(&c.fvUnsigned, "fenceview-unsigned", "", "a second fenceview started with --signing=off, base URL: its RPC stream is a row of its own (empty: skip)")
	fs.StringVar(&c.fvUnsignedKey, "fenceview-unsigned-key", os.Getenv("FENCEVIEW_UNSIGNED_KEY"), "API key (role client) of -fenceview-unsigned (env FENCEVIEW_UNSIGNED_KEY)")
	fs.IntVar(&c.fvUnsignedPID, "fenceview-unsigned-pid", 0, "the process id of -fenceview-unsigned: adds its CPU time per operation")
	fs.IntVar(&c.fvPID, "fenceview-pid", 0, "fenceview's process id: adds its CPU time per operation (Linux)")
	fs.IntVar(&c.redisPID, "redis-pid", 0, "the process id of -redis: adds its CPU time per operation")
	fs.IntVar(&c.redisAOFPID, "redis-aof-pid", 0, "the process id of -redis-aof: adds its CPU time per operation")
	fs.BoolVar(&c.primitives, "primitives", false, "run the primitives' benchmark instead (semaphores, multi-locks) against -fenceview and -redis-aof")
	fs.IntVar(&c.permits, "permits", 16, "permits of the primitives' benchmark's semaphore")
	return c, fs.Parse(args)
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	c, err := parseFlags(args)
	if err != nil {
		return err
	}
	if c.primitives {
		return runPrimitives(ctx, primitiveConfig{fenceview: c.fvURL, key: c.fvKey, redisAOF: c.redisAOF, clients: c.clients,
			permits: c.permits, resources: c.resources, duration: c.duration, warmup: c.warmup}, stdout)
	}
	targets, err := targetsOf(c)
	defer func() {
		for _, t := range targets {
			t.drv.Close()
		}
	}()
	if err != nil {
		return err
	}
	works := workloadsOf(c)
	fmt.Fprintf(stdout, "%d resources, %v per cell after %v warm-up, %d round(s); cells run one at a time\n",
		c.resources, c.duration, c.warmup, c.rounds)
	cells, failures, err := measure(ctx, c, works, targets, stdout)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	printTable(stdout, works, targets, cells, c.rounds)
	if c.jsonOut != "" {
		if err := writeCells(c.jsonOut, works, targets, cells); err != nil {
			return err
		}
	}
	if len(failures) > 0 {
		return fmt.Errorf("checks failed:\n  %s", strings.Join(failures, "\n  "))
	}
	return nil
}

// targetsOf makes a driver for every system c names, fenceview's first.
func targetsOf(c config) ([]target, error) {
	var targets []target
	fenceview := func(label, url, key string, rpc bool, pid int) error {
		var d load.Driver
		if rpc {
			r, err := load.NewGoClient(url, true)
			if err != nil {
				return err
			}
			r.Key, d = key, r
		} else {
			h, err := load.NewHTTP(url)
			if err != nil {
				return err
			}
			h.Key, d = key, h
		}
		targets = append(targets, target{label, "yes", d, pid})
		return nil
	}
	for _, f := range []struct {
		label, url, key string
		rpc, skip       bool
		pid             int
	}{
		{"fenceview", c.fvURL, c.fvKey, false, false, c.fvPID},
		{"fenceview (RPC stream)", c.fvURL, c.fvKey, true, !c.fvRPC, c.fvPID},
		{"fenceview (RPC stream, --signing=off)", c.fvUnsigned, c.fvUnsignedKey, true, false, c.fvUnsignedPID},
		{"fenceview cluster, leader", c.fvCluster, c.fvKey, false, false, 0},
		{"fenceview cluster, follower", c.fvFollower, c.fvKey, false, false, 0},
	} {
		if f.url == "" || f.skip {
			continue
		}
		if err := fenceview(f.label, f.url, f.key, f.rpc, f.pid); err != nil {
			return targets, err
		}
	}
	if c.etcdURLs != "" {
		targets = append(targets, target{"etcd concurrency.Mutex", "yes", newEtcd(strings.Split(c.etcdURLs, ",")), 0})
	}
	if c.redisAddr != "" {
		targets = append(targets, target{"redis (no persistence)", "no", newRedis("redis", c.redisAddr), c.redisPID})
	}
	if c.redisAOF != "" {
		targets = append(targets, target{"redis (AOF always)", "yes", newRedis("redis-aof", c.redisAOF), c.redisAOFPID})
	}
	if c.pgDSN != "" {
		targets = append(targets, target{"postgresql (fsync on)", "yes", newPostgres(c.pgDSN), 0})
	}
	if c.sqliteDir != "" {
		targets = append(targets, target{"sqlite (WAL, FULL, 1 conn)", "yes", newSQLite(c.sqliteDir), 0})
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("no targets: give -fenceview, -redis, -redis-aof, -postgres or -sqlite")
	}
	return targets, nil
}

// workloadsOf lists the table's rows, widest first: pools are sized by
// the first run.
func workloadsOf(c config) []workload {
	works := []workload{
		{fmt.Sprintf("grants/s, %d clients", c.clients), c.clients, load.Mix{Grant: 1}},
		{fmt.Sprintf("fenced writes/s, %d clients", c.clients), c.clients, load.Mix{Fence: 1}},
	}
	if c.single && c.clients != 1 {
		works = append(works,
			workload{"grants/s, 1 client", 1, load.Mix{Grant: 1}},
			workload{"fenced writes/s, 1 client", 1, load.Mix{Fence: 1}})
	}
	return works
}

// measure runs every workload on every target, one cell at a time, round
// after round, printing each measurement as it comes. failures are the
// cells whose checks failed (a token issued twice, errors): measured and
// reported all the same.
func measure(ctx context.Context, c config, works []workload, targets []target, stdout io.Writer) (cells map[[2]int]*cell, failures []string, err error) {
	cells = make(map[[2]int]*cell)
	for round := 0; round < c.rounds; round++ {
		for wi, w := range works {
			for ti, t := range targets {
				if ctx.Err() != nil {
					return nil, nil, ctx.Err()
				}
				rep, err := load.Run(ctx, load.Config{
					Clients:   w.clients,
					Resources: c.resources,
					Duration:  c.duration,
					Warmup:    c.warmup,
					Mix:       w.mix,
					Lease:     30 * time.Second,
					Prefix:    fmt.Sprintf("bench-r%d-w%d", round, wi),
					Seed:      uint64(round + 1),
					ServerPID: t.pid,
				}, t.drv)
				if err != nil {
					return nil, nil, err
				}
				kind := "cycle"
				if w.mix.Grant == 0 {
					kind = "fence"
				}
				s := rep.Ops[kind]
				fmt.Fprintf(stdout, "round %d  %-28s %-28s %9.0f ops/s  p50 %6.3f ms  p99 %7.3f ms  busy %d\n",
					round+1, w.name, t.label, s.OpsPerSec, s.P50Ms, s.P99Ms, rep.Busy)
				if err := rep.Err(); err != nil {
					failures = append(failures, fmt.Sprintf("%s, %s: %v", t.label, w.name, err))
				}
				cl := cells[[2]int{wi, ti}]
				if cl == nil {
					cl = &cell{Target: t.label, Workload: w.name}
					cells[[2]int{wi, ti}] = cl
				}
				cl.Rounds = append(cl.Rounds, s)
				cl.CPU = append(cl.CPU, rep.CPU)
			}
		}
	}
	return cells, failures, nil
}

// writeCells writes every cell, in the table's order, as JSON to path.
func writeCells(path string, works []workload, targets []target, cells map[[2]int]*cell) error {
	var all []*cell
	for wi := range works {
		for ti := range targets {
			all = append(all, cells[[2]int{wi, ti}])
		}
	}
	b, _ := json.MarshalIndent(all, "", "  ")
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func median(c *cell) (med, lo, hi float64) {
	v := make([]float64, len(c.Rounds))
	for i, s := range c.Rounds {
		v[i] = s.OpsPerSec
	}
	slices.Sort(v)
	n := len(v)
	med = v[n/2]
	if n%2 == 0 {
		med = (v[n/2-1] + v[n/2]) / 2
	}
	return med, v[0], v[n-1]
}

// markdown writes rows as a Markdown table: first column left-aligned,
// the others right-aligned, padded so the text reads as a table too.
func markdown(out io.Writer, rows [][]string) {
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	for ri, r := range rows {
		var b strings.Builder
		for i, c := range r {
			if i == 0 {
				fmt.Fprintf(&b, "| %-*s ", width[i], c)
			} else {
				fmt.Fprintf(&b, "| %*s ", width[i], c)
			}
		}
		fmt.Fprintln(out, b.String()+"|")
		if ri == 0 {
			b.Reset()
			for i := range r {
				if i == 0 {
					b.WriteString("|" + strings.Repeat("-", width[i]+2))
				} else {
					b.WriteString("|" + strings.Repeat("-", width[i]+1) + ":")
				}
			}
			fmt.Fprintln(out, b.String()+"|")
		}
	}
}

// medianRound is the index of c's round of median throughput.
func medianRound(c *cell) int {
	idx := make([]int, len(c.Rounds))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(c.Rounds[a].OpsPerSec, c.Rounds[b].OpsPerSec) })
	return idx[len(idx)/2]
}

// printCPU prints what an operation cost in CPU time, for the targets
// whose CPU was measured: the server's (when its process is known) plus
// the load's, and how busy the whole machine was. A grant cycle is one
// operation.
func printCPU(out io.Writer, head []string, works []workload, targets []target, cells map[[2]int]*cell) {
	rows := [][]string{head}
	for ti, t := range targets {
		row := []string{t.label}
		measured := false
		for wi := range works {
			c := cells[[2]int{wi, ti}]
			cpu := c.CPU[medianRound(c)]
			if cpu == nil {
				row = append(row, "")
				continue
			}
			measured = true
			server := "?"
			if t.pid > 0 {
				server = fmt.Sprintf("%.0f", cpu.ServerUs)
			}
			row = append(row, fmt.Sprintf("%s + %.0f (%.0f%%)", server, cpu.LoadUs, 100*cpu.Busy))
		}
		if measured {
			rows = append(rows, row)
		}
	}
	if len(rows) == 1 {
		return
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "CPU time per operation, us: server + load (? where the server's process is not known), and how busy the machine's CPUs were (of the median round):")
	fmt.Fprintln(out)
	markdown(out, rows)
}

// printTable prints, in Markdown, one row per target with its median ops/s
// per workload (and the spread over rounds), then p50/p99 of the median
// round, then for each fenceview row its ratio to every peer.
func printTable(out io.Writer, works []workload, targets []target, cells map[[2]int]*cell, rounds int) {
	head := []string{"system"}
	for _, w := range works {
		head = append(head, w.name)
	}
	rows := [][]string{append(slices.Clone(head), "durable")}
	for ti, t := range targets {
		row := []string{t.label}
		for wi := range works {
			med, lo, hi := median(cells[[2]int{wi, ti}])
			if rounds > 1 {
				row = append(row, fmt.Sprintf("%.0f (%.0f-%.0f)", med, lo, hi))
			} else {
				row = append(row, fmt.Sprintf("%.0f", med))
			}
		}
		rows = append(rows, append(row, t.durable))
	}
	markdown(out, rows)

	fmt.Fprintln(out)
	fmt.Fprintln(out, "Latency, p50 / p99 ms (of the median round; a grant is acquire + release):")
	fmt.Fprintln(out)
	rows = [][]string{head}
	for ti, t := range targets {
		row := []string{t.label}
		for wi := range works {
			c := cells[[2]int{wi, ti}]
			s := c.Rounds[medianRound(c)]
			row = append(row, fmt.Sprintf("%.2f / %.2f", s.P50Ms, s.P99Ms))
		}
		rows = append(rows, row)
	}
	markdown(out, rows)
	printCPU(out, head, works, targets, cells)

	var fv, peers []int
	for ti, t := range targets {
		if strings.HasPrefix(t.label, "fenceview") {
			fv = append(fv, ti)
		} else {
			peers = append(peers, ti)
		}
	}
	if len(peers) == 0 {
		return
	}
	for _, f := range fv {
		fmt.Fprintln(out)
		fmt.Fprintf(out, "%s / peer (above 1: fenceview is faster):\n", targets[f].label)
		fmt.Fprintln(out)
		rows = [][]string{append([]string{targets[f].label + " / peer"}, head[1:]...)}
		for _, p := range peers {
			row := []string{targets[p].label}
			for wi := range works {
				a, _, _ := median(cells[[2]int{wi, f}])
				b, _, _ := median(cells[[2]int{wi, p}])
				row = append(row, fmt.Sprintf("%.2fx", a/b))
			}
			rows = append(rows, row)
		}
		markdown(out, rows)
	}
}
