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

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fvURL := fs.String("fenceview", "", "fenceview base URL (empty: skip)")
	fvRPC := fs.Bool("rpc", true, "also run fenceview through the Go client over its RPC stream")
	fvKey := fs.String("fenceview-key", os.Getenv("FENCEVIEW_KEY"), "API key (role client) for a fenceview with auth on (env FENCEVIEW_KEY)")
	redisAddr := fs.String("redis", "", "Redis without persistence, host:port (empty: skip)")
	redisAOF := fs.String("redis-aof", "", "Redis with appendfsync always, host:port (empty: skip)")
	pgDSN := fs.String("postgres", "", "PostgreSQL connection string, fsync on (empty: skip)")
	sqliteDir := fs.String("sqlite", "", "directory for the SQLite baseline's database (empty: skip)")
	fvCluster := fs.String("fenceview-cluster", "", "the leader of a fenceview cluster, base URL (empty: skip)")
	fvFollower := fs.String("fenceview-follower", "", "a follower of that cluster, base URL (empty: skip)")
	etcdURLs := fs.String("etcd", "", "etcd client URLs, comma-separated, for etcd's own concurrency.Mutex (empty: skip)")
	clients := fs.Int("clients", 64, "clients of the concurrent workloads")
	resources := fs.Int("resources", 1024, "resources")
	duration := fs.Duration("duration", 5*time.Second, "measured time per cell")
	warmup := fs.Duration("warmup", time.Second, "warm-up per cell")
	rounds := fs.Int("rounds", 1, "rounds; each cell reports the median and the spread")
	single := fs.Bool("single", true, "also run every workload with 1 client")
	jsonOut := fs.String("json", "", "write every measurement as JSON to this file")
	fvUnsigned := fs.String("fenceview-unsigned", "", "a second fenceview started with --signing=off, base URL: its RPC stream is a row of its own (empty: skip)")
	fvUnsignedKey := fs.String("fenceview-unsigned-key", os.Getenv("FENCEVIEW_UNSIGNED_KEY"), "API key (role client) of -fenceview-unsigned (env FENCEVIEW_UNSIGNED_KEY)")
	fvUnsignedPID := fs.Int("fenceview-unsigned-pid", 0, "the process id of -fenceview-unsigned: adds its CPU time per operation")
	fvPID := fs.Int("fenceview-pid", 0, "fenceview's process id: adds its CPU time per operation (Linux)")
	redisPID := fs.Int("redis-pid", 0, "the process id of -redis: adds its CPU time per operation")
	redisAOFPID := fs.Int("redis-aof-pid", 0, "the process id of -redis-aof: adds its CPU time per operation")
	primitives := fs.Bool("primitives", false, "run the primitives' benchmark instead (semaphores, multi-locks) against -fenceview and -redis-aof")
	permits := fs.Int("permits", 16, "permits of the primitives' benchmark's semaphore")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *primitives {
		return runPrimitives(ctx, primitiveConfig{fenceview: *fvURL, key: *fvKey, redisAOF: *redisAOF, clients: *clients,
			permits: *permits, resources: *resources, duration: *duration, warmup: *warmup}, stdout)
	}

	var targets []target
	if *fvURL != "" {
		d, err := load.NewHTTP(*fvURL)
		if err != nil {
			return err
		}
		d.Key = *fvKey
		targets = append(targets, target{"fenceview", "yes", d, *fvPID})
		if *fvRPC {
			r, err := load.NewGoClient(*fvURL, true)
			if err != nil {
				return err
			}
			r.Key = *fvKey
			targets = append(targets, target{"fenceview (RPC stream)", "yes", r, *fvPID})
		}
	}
	if *fvUnsigned != "" {
		r, err := load.NewGoClient(*fvUnsigned, true)
		if err != nil {
			return err
		}
		r.Key = *fvUnsignedKey
		targets = append(targets, target{"fenceview (RPC stream, --signing=off)", "yes", r, *fvUnsignedPID})
	}
	for _, c := range []struct{ label, url string }{
		{"fenceview cluster, leader", *fvCluster},
		{"fenceview cluster, follower", *fvFollower},
	} {
		if c.url == "" {
			continue
		}
		d, err := load.NewHTTP(c.url)
		if err != nil {
			return err
		}
		d.Key = *fvKey
		targets = append(targets, target{c.label, "yes", d, 0})
	}
	if *etcdURLs != "" {
		targets = append(targets, target{"etcd concurrency.Mutex", "yes", newEtcd(strings.Split(*etcdURLs, ",")), 0})
	}
	if *redisAddr != "" {
		targets = append(targets, target{"redis (no persistence)", "no", newRedis("redis", *redisAddr), *redisPID})
	}
	if *redisAOF != "" {
		targets = append(targets, target{"redis (AOF always)", "yes", newRedis("redis-aof", *redisAOF), *redisAOFPID})
	}
	if *pgDSN != "" {
		targets = append(targets, target{"postgresql (fsync on)", "yes", newPostgres(*pgDSN), 0})
	}
	if *sqliteDir != "" {
		targets = append(targets, target{"sqlite (WAL, FULL, 1 conn)", "yes", newSQLite(*sqliteDir), 0})
	}
	if len(targets) == 0 {
		return fmt.Errorf("no targets: give -fenceview, -redis, -redis-aof, -postgres or -sqlite")
	}
	defer func() {
		for _, t := range targets {
			t.drv.Close()
		}
	}()

	// Widest first: pools are sized by the first run.
	works := []workload{
		{fmt.Sprintf("grants/s, %d clients", *clients), *clients, load.Mix{Grant: 1}},
		{fmt.Sprintf("fenced writes/s, %d clients", *clients), *clients, load.Mix{Fence: 1}},
	}
	if *single && *clients != 1 {
		works = append(works,
			workload{"grants/s, 1 client", 1, load.Mix{Grant: 1}},
			workload{"fenced writes/s, 1 client", 1, load.Mix{Fence: 1}})
	}
	fmt.Fprintf(stdout, "%d resources, %v per cell after %v warm-up, %d round(s); cells run one at a time\n",
		*resources, *duration, *warmup, *rounds)

	cells := make(map[[2]int]*cell)
	var failures []string
	for round := 0; round < *rounds; round++ {
		for wi, w := range works {
			for ti, t := range targets {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				rep, err := load.Run(ctx, load.Config{
					Clients:   w.clients,
					Resources: *resources,
					Duration:  *duration,
					Warmup:    *warmup,
					Mix:       w.mix,
					Lease:     30 * time.Second,
					Prefix:    fmt.Sprintf("bench-r%d-w%d", round, wi),
					Seed:      uint64(round + 1),
					ServerPID: t.pid,
				}, t.drv)
				if err != nil {
					return err
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
				c := cells[[2]int{wi, ti}]
				if c == nil {
					c = &cell{Target: t.label, Workload: w.name}
					cells[[2]int{wi, ti}] = c
				}
				c.Rounds = append(c.Rounds, s)
				c.CPU = append(c.CPU, rep.CPU)
			}
		}
	}

	fmt.Fprintln(stdout)
	printTable(stdout, works, targets, cells, *rounds)
	if *jsonOut != "" {
		var all []*cell
		for wi := range works {
			for ti := range targets {
				all = append(all, cells[[2]int{wi, ti}])
			}
		}
		b, _ := json.MarshalIndent(all, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if len(failures) > 0 {
		return fmt.Errorf("checks failed:\n  %s", strings.Join(failures, "\n  "))
	}
	return nil
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
