// Command storm measures what one client key's retry storm costs the
// others (issue 38's scenario): it starts a fenceview server, then runs
//
//   - honest: 8 clients of one key doing grant cycles (acquire with waitMs 0,
//     release) on 1024 resources, each over its own keep-alive connection,
//     honouring Retry-After when shed;
//   - holder: a lock of the honest key held with 2 s leases, renewed every
//     500 ms: a renew that fails is a lease lost;
//
// first alone (quiet), then beside the storm: 200 connections of another
// client key in closed loops, acquiring 16 locks that key already holds
// (waitMs 0, so each is refused at once) and fencing them with their
// current tokens, never waiting before a retry (not even when shed). It
// prints the honest grant cycles per second quiet and under the storm, the
// renew latencies, the leases lost and the server's peak RSS.
//
//	cd bench && go build -o /tmp/fenceview ../cmd/fenceview && go run ./storm -bin /tmp/fenceview
package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type config struct {
	bin, args        string
	conns, honest    int
	locks, resources int
	phase, lease     time.Duration
	renew            time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.bin, "bin", "", "the fenceview binary to start (required)")
	flag.StringVar(&c.args, "args", "", "more flags for the server, space-separated")
	flag.IntVar(&c.conns, "conns", 200, "storm connections (one client key)")
	flag.IntVar(&c.honest, "honest", 8, "honest clients (another client key)")
	flag.IntVar(&c.locks, "locks", 16, "locks the storm key holds and keeps acquiring")
	flag.IntVar(&c.resources, "resources", 1024, "resources of the honest grant cycles")
	flag.DurationVar(&c.phase, "phase", 5*time.Second, "duration of the quiet phase and of the storm phase")
	flag.DurationVar(&c.lease, "lease", 2*time.Second, "the holder's lease")
	flag.DurationVar(&c.renew, "renew", 500*time.Millisecond, "the holder's renew period")
	role := flag.String("role", "", "internal: storm runs the storm connections alone (-url, -key, -tokens) until interrupted")
	url := flag.String("url", "", "internal: with -role storm, the server")
	key := flag.String("key", "", "internal: with -role storm, the storm key")
	toks := flag.String("tokens", "", "internal: with -role storm, the held locks' tokens, comma-separated")
	verbose = flag.Bool("v", false, "print the server's admission metrics at the end of each phase")
	flag.Parse()
	if *role == "storm" {
		runStorm(*url, *key, *toks, c.conns)
		return
	}
	if c.bin == "" {
		fmt.Fprintln(os.Stderr, "storm: -bin is required (go build -o /tmp/fenceview ./cmd/fenceview)")
		os.Exit(2)
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "storm:", err)
		os.Exit(1)
	}
}

// server is the fenceview process under test.
type server struct {
	url, admin string
	cmd        *exec.Cmd
	dir        string
}

func start(c config) (*server, error) {
	dir, err := os.MkdirTemp("", "storm-")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	admin := randomHex(32)
	args := []string{"--addr", addr, "--db", filepath.Join(dir, "fv.db"), "--admin-token", admin}
	args = append(args, strings.Fields(c.args)...)
	cmd := exec.Command(c.bin, args...)
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{url: "http://" + addr, admin: admin, cmd: cmd, dir: dir}
	for i := 0; ; i++ {
		resp, err := http.Get(s.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			return s, nil
		}
		if i > 200 {
			s.stop()
			return nil, fmt.Errorf("the server did not answer: %v (log: %s)", err, filepath.Join(dir, "server.log"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *server) stop() {
	s.cmd.Process.Kill()
	s.cmd.Wait()
	os.RemoveAll(s.dir)
}

// rss is the server's resident set, from /proc (Linux); 0 elsewhere.
func (s *server) rss() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// caller is one keep-alive connection with a key.
type caller struct {
	base, key string
	hc        *http.Client
}

func newCaller(base, key string) *caller {
	tr := &http.Transport{MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1}
	return &caller{base: base, key: key, hc: &http.Client{Transport: tr, Timeout: time.Minute}}
}

// post sends body to path and decodes the answer into out (when not nil).
func (c *caller) post(path string, body any, out any) (int, http.Header, error) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, c.base+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode == http.StatusOK {
		err = json.NewDecoder(resp.Body).Decode(out)
	} else {
		io.Copy(io.Discard, resp.Body)
	}
	return resp.StatusCode, resp.Header, err
}

type grant struct {
	Token int64 `json:"token"`
}

func (s *server) createKey(name string) (string, error) {
	c := newCaller(s.url, s.admin)
	var k struct {
		Secret string `json:"secret"`
	}
	b, _ := json.Marshal(map[string]any{"name": name, "role": "client"})
	req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/auth/keys", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+s.admin)
	resp, err := c.hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("creating key %s: %s", name, resp.Status)
	}
	err = json.NewDecoder(resp.Body).Decode(&k)
	return k.Secret, err
}

// backoff honours a shed answer's Retry-After, jittered, as the clients do.
func backoff(h http.Header) {
	secs, _ := strconv.Atoi(h.Get("Retry-After"))
	d := time.Duration(max(secs, 0)) * time.Second
	if d == 0 {
		d = 100 * time.Millisecond
	}
	time.Sleep(d/2 + mrand.N(d/2+1))
}

// honestLoop runs grant cycles until stop, counting them.
func honestLoop(c *caller, id int, resources int, stop *atomic.Bool, cycles, shed *atomic.Int64) {
	holder := fmt.Sprintf("honest-%d", id)
	for !stop.Load() {
		res := fmt.Sprintf("honest-%d", mrand.N(resources))
		var g grant
		status, h, err := c.post("/v1/locks/"+res+"/acquire", map[string]any{"holder": holder, "leaseMs": 30000, "waitMs": 0}, &g)
		if err != nil {
			continue
		}
		if status == http.StatusTooManyRequests {
			shed.Add(1)
			backoff(h)
			continue
		}
		if status != http.StatusOK {
			continue
		}
		for {
			status, h, err = c.post("/v1/locks/"+res+"/release", map[string]any{"holder": holder}, nil)
			if status == http.StatusTooManyRequests {
				shed.Add(1)
				backoff(h)
				continue
			}
			break
		}
		if err == nil && status == http.StatusOK {
			cycles.Add(1)
		}
	}
}

// stormLoop is one hostile connection: acquires of held locks and fences,
// in a closed loop, never backing off.
func stormLoop(c *caller, id int, tokens []int64, stop *atomic.Bool, sent, shed *atomic.Int64) {
	holder := fmt.Sprintf("storm-%d", id)
	for i := id; !stop.Load(); i++ {
		lock := i % len(tokens)
		res := fmt.Sprintf("storm-%d", lock)
		var status int
		if i%2 == 0 {
			status, _, _ = c.post("/v1/locks/"+res+"/acquire", map[string]any{"holder": holder, "leaseMs": 30000, "waitMs": 0}, nil)
		} else {
			status, _, _ = c.post("/v1/fence/"+res, map[string]any{"token": tokens[lock]}, nil)
		}
		sent.Add(1)
		if status == http.StatusTooManyRequests {
			shed.Add(1)
		}
	}
}

// holder keeps one lease, renewing it every period; a renew refused or
// late is a lease lost, and the lock is acquired again.
type holder struct {
	c        *caller
	lease    time.Duration
	mu       sync.Mutex
	lat      []time.Duration
	lost     int
	shed     int
	acquires int
}

func (h *holder) acquire() error {
	for {
		status, hd, err := h.c.post("/v1/locks/lease-0/acquire", map[string]any{"holder": "keeper", "leaseMs": h.lease.Milliseconds(), "waitMs": 5000}, nil)
		if err != nil {
			return err
		}
		if status == http.StatusTooManyRequests {
			backoff(hd)
			continue
		}
		if status != http.StatusOK {
			return fmt.Errorf("holder acquire: %d", status)
		}
		h.acquires++
		return nil
	}
}

func (h *holder) run(period time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		start := time.Now()
		status, _, err := h.c.post("/v1/locks/lease-0/renew", map[string]any{"holder": "keeper", "leaseMs": h.lease.Milliseconds()}, nil)
		d := time.Since(start)
		h.mu.Lock()
		h.lat = append(h.lat, d)
		if status == http.StatusTooManyRequests {
			h.shed++
		}
		if err != nil || status != http.StatusOK {
			h.lost++
			h.mu.Unlock()
			h.acquire()
			continue
		}
		h.mu.Unlock()
	}
}

// take returns the renew latencies so far and the leases lost, and starts
// counting again.
func (h *holder) take() ([]time.Duration, int, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	lat, lost, shed := h.lat, h.lost, h.shed
	h.lat, h.lost, h.shed = nil, 0, 0
	return lat, lost, shed
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, int(math.Ceil(p*float64(len(d))))-1)]
}

// phase runs the honest clients for c.phase, the storm beside them when
// storm is set, and reports.
type result struct {
	cycles             float64
	renews             int
	renewP50, renewP99 time.Duration
	renewMax           time.Duration
	lost, holderShed   int
	honestShed         int64
	stormSent          int64
	stormShed          int64
	rssPeak            int64
}

func run(c config) error {
	s, err := start(c)
	if err != nil {
		return err
	}
	defer s.stop()
	honestKey, err := s.createKey("honest")
	if err != nil {
		return err
	}
	stormKey, err := s.createKey("storm")
	if err != nil {
		return err
	}
	// The storm key holds its locks, and knows their tokens.
	owner := newCaller(s.url, stormKey)
	tokens := make([]int64, c.locks)
	for i := range tokens {
		var g grant
		status, _, err := owner.post(fmt.Sprintf("/v1/locks/storm-%d/acquire", i), map[string]any{"holder": "owner", "leaseMs": 600000}, &g)
		if err != nil || status != http.StatusOK {
			return fmt.Errorf("storm setup: %d %v", status, err)
		}
		tokens[i] = g.Token
	}
	h := &holder{c: newCaller(s.url, honestKey), lease: c.lease}
	if err := h.acquire(); err != nil {
		return err
	}
	stopHolder := make(chan struct{})
	go h.run(c.renew, stopHolder)
	defer close(stopHolder)

	phase := func(storm bool) result {
		var stop atomic.Bool
		var cycles, honestShed, stormSent, stormShed atomic.Int64
		var wg sync.WaitGroup
		var child *exec.Cmd
		var childOut bytes.Buffer
		if storm {
			// The storm runs in a process of its own, as it would on
			// another machine: in this one, its goroutines would take the
			// honest clients' share of this process's CPU.
			var toks []string
			for _, t := range tokens {
				toks = append(toks, strconv.FormatInt(t, 10))
			}
			child = exec.Command(os.Args[0], "-role", "storm", "-url", s.url, "-key", stormKey, "-conns", strconv.Itoa(c.conns),
				"-tokens", strings.Join(toks, ","))
			child.Stdout, child.Stderr = &childOut, os.Stderr
			if err := child.Start(); err != nil {
				panic(err)
			}
			time.Sleep(500 * time.Millisecond) // the storm is up before the count starts
		}
		h.take()
		for i := range c.honest {
			wg.Go(func() { honestLoop(newCaller(s.url, honestKey), i, c.resources, &stop, &cycles, &honestShed) })
		}
		var peak int64
		deadline := time.Now().Add(c.phase)
		for time.Now().Before(deadline) {
			peak = max(peak, s.rss())
			time.Sleep(100 * time.Millisecond)
		}
		n := cycles.Load()
		if *verbose {
			s.printMetrics()
		}
		lat, lost, hshed := h.take()
		stop.Store(true)
		wg.Wait()
		if child != nil {
			child.Process.Signal(os.Interrupt)
			child.Wait()
			var sent, shed int64
			fmt.Sscan(childOut.String(), &sent, &shed)
			stormSent.Store(sent)
			stormShed.Store(shed)
		}
		return result{cycles: float64(n) / c.phase.Seconds(), renews: len(lat), renewP50: percentile(lat, 0.5), renewP99: percentile(lat, 0.99),
			renewMax: percentile(lat, 1), lost: lost, holderShed: hshed, honestShed: honestShed.Load(), stormSent: stormSent.Load(), stormShed: stormShed.Load(), rssPeak: peak}
	}
	quiet := phase(false)
	storm := phase(true)
	fmt.Printf("storm: %d connections of one key (acquires of %d held locks, waitMs 0, and fences; no backoff) beside %d honest clients of another key (grant cycles) and a holder (%v leases renewed every %v); %v per phase\n",
		c.conns, c.locks, c.honest, c.lease, c.renew, c.phase)
	fmt.Printf("%-7s %12s %8s %10s %10s %10s %6s %12s %12s %10s\n", "phase", "honest c/s", "renews", "renew p50", "renew p99", "renew max", "lost", "honest 429", "storm req/s", "storm 429")
	for _, r := range []struct {
		name string
		r    result
	}{{"quiet", quiet}, {"storm", storm}} {
		fmt.Printf("%-7s %12.0f %8d %10v %10v %10v %6d %12d %12.0f %10d\n", r.name, r.r.cycles, r.r.renews, r.r.renewP50.Round(time.Millisecond/10),
			r.r.renewP99.Round(time.Millisecond/10), r.r.renewMax.Round(time.Millisecond/10), r.r.lost, r.r.honestShed, float64(r.r.stormSent)/c.phase.Seconds(), r.r.stormShed)
	}
	ratio := 0.0
	if quiet.cycles > 0 {
		ratio = storm.cycles / quiet.cycles
	}
	fmt.Printf("honest throughput under storm: %.0f%% of quiet (goal >= 50%%); leases lost: %d (goal 0); renew p99 under storm: %v (goal <= 250ms); server RSS peak: %.0f MiB (goal < 256)\n",
		100*ratio, quiet.lost+storm.lost, storm.renewP99.Round(time.Millisecond/10), float64(max(quiet.rssPeak, storm.rssPeak))/(1<<20))
	return nil
}

// runStorm is the storm process: its connections run until it is
// interrupted, then it prints the requests sent and those shed.
func runStorm(url, key, toks string, conns int) {
	var tokens []int64
	for t := range strings.SplitSeq(toks, ",") {
		n, _ := strconv.ParseInt(t, 10, 64)
		tokens = append(tokens, n)
	}
	var stop atomic.Bool
	var sent, shed atomic.Int64
	for i := range conns {
		go stormLoop(newCaller(url, key), i, tokens, &stop, &sent, &shed)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	<-sig
	stop.Store(true)
	fmt.Println(sent.Load(), shed.Load())
}

var verbose *bool

// printMetrics prints the server's admission control metrics.
func (s *server) printMetrics() {
	req, _ := http.NewRequest(http.MethodGet, s.url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+s.admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.HasPrefix(line, "fenceview_overload") && !strings.Contains(line, "_bucket") {
			fmt.Println(line)
		}
	}
}
