// Package load drives a fenced-lock workload (grant cycles, fenced writes,
// stale writes) against a backend through a Driver, measures throughput and
// latency per operation kind, and checks what it sees: tokens granted for a
// resource strictly increase, stale tokens are refused, current ones are
// accepted.
//
// The fenceload command runs it against a fenceview server (the HTTP
// driver); the peer comparison under bench/ runs the very same loop against
// Redis, PostgreSQL and SQLite drivers, so every system gets one workload.
package load

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Mix is the weight of each operation kind: a grant cycle (acquire, then
// release), a fenced write with the newest token, a write with a stale one.
type Mix struct {
	Grant int `json:"grant"`
	Fence int `json:"fence"`
	Stale int `json:"stale"`
}

// ParseMix reads "grant", "fence", "mixed" (grant=45,fence=45,stale=10) or
// explicit weights such as "grant=1,stale=1".
func ParseMix(s string) (Mix, error) {
	switch s {
	case "grant":
		return Mix{Grant: 1}, nil
	case "fence":
		return Mix{Fence: 1}, nil
	case "mixed":
		return Mix{Grant: 45, Fence: 45, Stale: 10}, nil
	}
	var m Mix
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 0 {
			return Mix{}, fmt.Errorf("mix %q: want grant, fence, mixed or kind=weight,...", s)
		}
		switch k {
		case "grant":
			m.Grant = n
		case "fence":
			m.Fence = n
		case "stale":
			m.Stale = n
		default:
			return Mix{}, fmt.Errorf("mix %q: unknown kind %q (grant, fence, stale)", s, k)
		}
	}
	if m.Grant+m.Fence+m.Stale == 0 {
		return Mix{}, fmt.Errorf("mix %q: all weights are zero", s)
	}
	return m, nil
}

func (m Mix) String() string {
	return fmt.Sprintf("grant=%d,fence=%d,stale=%d", m.Grant, m.Fence, m.Stale)
}

// Config is one run.
type Config struct {
	Clients   int
	Resources int
	Duration  time.Duration // measured time
	Warmup    time.Duration // run before measuring; its tokens are still checked
	Mix       Mix
	Lease     time.Duration
	Wait      time.Duration
	Prefix    string // resource ids are Prefix + "-" + index
	Seed      uint64
	// ServerPID, when set, is the server's process on this machine: the
	// report's CPU then gives its CPU time per operation too (Linux).
	ServerPID int
}

// worker is one client's state; nothing in it is shared.
type worker struct {
	hist     [nKinds]histogram
	checked  int64
	busy     int64
	accepted int64
	rejected int64
	errs     int64
	s5xx     int64
	firstErr string
}

func (w *worker) fail(err error) {
	w.errs++
	var se *StatusError
	if errors.As(err, &se) && se.Code >= 500 {
		w.s5xx++
	}
	if w.firstErr == "" {
		w.firstErr = err.Error()
	}
}

// run is the shared state of one run.
type run struct {
	cfg     Config
	check   *Checker
	marks   []atomic.Int64 // highest token seen accepted by a fenced write, per resource
	fenceOK bool           // no grants run, so a current token must always be accepted
}

func (r *run) raiseMark(res int, tok int64) {
	for {
		old := r.marks[res].Load()
		if tok <= old || r.marks[res].CompareAndSwap(old, tok) {
			return
		}
	}
}

// Run runs cfg against d: Prepare, a setup that gives every resource a
// token and a high-water mark when the mix has writes, then the clients.
// Driver errors during the run are in the report, not in the error, which
// is only for a run that could not start.
func Run(ctx context.Context, cfg Config, d Driver) (*Report, error) {
	if cfg.Clients < 1 || cfg.Resources < 1 {
		return nil, fmt.Errorf("clients and resources must be at least 1")
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.ServerPID != 0 {
		// A wrong pid fails now, not as a missing line after the run.
		if _, err := processCPU(strconv.Itoa(cfg.ServerPID)); err != nil {
			return nil, fmt.Errorf("server process %d: cannot read its CPU time: %w", cfg.ServerPID, err)
		}
	}
	names := make([]string, cfg.Resources)
	for i := range names {
		names[i] = cfg.Prefix + "-" + strconv.Itoa(i)
	}
	if err := d.Prepare(ctx, Setup{Resources: names, Clients: cfg.Clients, Lease: cfg.Lease, Wait: cfg.Wait}); err != nil {
		return nil, fmt.Errorf("%s: prepare: %w", d.Name(), err)
	}
	clients := make([]Client, cfg.Clients)
	for i := range clients {
		c, err := d.NewClient(i, fmt.Sprintf("%s-c%d", cfg.Prefix, i))
		if err != nil {
			return nil, fmt.Errorf("%s: client %d: %w", d.Name(), i, err)
		}
		clients[i] = c
	}
	st := &run{
		cfg:     cfg,
		check:   NewChecker(cfg.Resources),
		marks:   make([]atomic.Int64, cfg.Resources),
		fenceOK: cfg.Mix.Grant == 0,
	}
	workers := make([]*worker, cfg.Clients)
	for i := range workers {
		workers[i] = new(worker)
	}
	if cfg.Mix.Fence+cfg.Mix.Stale > 0 {
		if err := st.setup(ctx, clients); err != nil {
			return nil, fmt.Errorf("%s: setup: %w", d.Name(), err)
		}
	}

	start := time.Now()
	measureFrom := start.Add(cfg.Warmup)
	deadline := measureFrom.Add(cfg.Duration)
	cpu := measureCPU(ctx, cfg.ServerPID, measureFrom, deadline)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st.client(ctx, i, clients[i], workers[i], measureFrom, deadline)
		}()
	}
	wg.Wait()
	end := time.Now()
	if end.After(deadline) {
		end = deadline // the last in-flight operations are recorded but not timed past the end
	}
	elapsed := end.Sub(measureFrom).Seconds()

	rep := st.report(d.Name(), workers, elapsed)
	rep.CPU = cpu(rep.Ops["cycle"].Count + rep.Ops["fence"].Count + rep.Ops["stale"].Count)
	return rep, nil
}

// setup gives every resource two grants (so that a stale token, one below
// the current, is still a valid positive token) and one accepted fenced
// write, spread over all clients.
func (st *run) setup(ctx context.Context, clients []Client) error {
	var wg sync.WaitGroup
	errs := make([]error, len(clients))
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := i; r < st.cfg.Resources; r += len(clients) {
				for st.check.Last(r) < 2 {
					tok, err := c.Acquire(ctx, r)
					if err != nil {
						errs[i] = fmt.Errorf("acquire %d: %w", r, err)
						return
					}
					st.check.Observe(r, tok)
					if err := c.Release(ctx, r); err != nil {
						errs[i] = fmt.Errorf("release %d: %w", r, err)
						return
					}
				}
				tok := st.check.Last(r)
				ok, err := c.Fence(ctx, r, tok)
				if err != nil {
					errs[i] = fmt.Errorf("fence %d: %w", r, err)
					return
				}
				if !ok {
					errs[i] = fmt.Errorf("fence %d: current token %d refused", r, tok)
					return
				}
				st.raiseMark(r, tok)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// client is the hot loop of one client: pick a resource and an operation,
// run it, time it. No allocation here beyond what the driver does.
func (st *run) client(ctx context.Context, id int, c Client, w *worker, measureFrom, deadline time.Time) {
	rng := rand.New(rand.NewPCG(st.cfg.Seed, uint64(id)+1))
	mix := st.cfg.Mix
	total := mix.Grant + mix.Fence + mix.Stale
	for ctx.Err() == nil {
		t0 := time.Now()
		if !t0.Before(deadline) {
			return
		}
		measure := !t0.Before(measureFrom)
		r := rng.IntN(st.cfg.Resources)
		pick := rng.IntN(total)
		var err error
		switch {
		case pick < mix.Grant:
			err = st.cycle(ctx, c, w, r, t0, measure)
		case pick < mix.Grant+mix.Fence:
			err = st.fence(ctx, c, w, r, t0, measure, false)
		default:
			err = st.fence(ctx, c, w, r, t0, measure, true)
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			w.fail(err)
			// A client that hit an error stops: the run fails anyway, and
			// a dead backend would otherwise be hammered in a tight loop.
			return
		}
	}
}

func (st *run) cycle(ctx context.Context, c Client, w *worker, r int, t0 time.Time, measure bool) error {
	tok, err := c.Acquire(ctx, r)
	t1 := time.Now()
	if errors.Is(err, ErrBusy) {
		if measure {
			w.busy++
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	// Observed before the release, so the next holder's token is
	// necessarily observed after this one.
	st.check.Observe(r, tok)
	w.checked++
	if err := c.Release(ctx, r); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	if measure {
		t2 := time.Now()
		w.hist[kAcquire].record(t1.Sub(t0))
		w.hist[kRelease].record(t2.Sub(t1))
		w.hist[kCycle].record(t2.Sub(t0))
	}
	return nil
}

func (st *run) fence(ctx context.Context, c Client, w *worker, r int, t0 time.Time, measure, stale bool) error {
	var tok int64
	kind := kFence
	if stale {
		kind = kStale
		// One below a token the resource is known to have accepted: it
		// must be refused whatever else happens concurrently.
		tok = st.marks[r].Load() - 1
		if tok < 1 {
			return nil // setup guarantees a mark of at least 2
		}
	} else {
		tok = st.check.Last(r)
	}
	ok, err := c.Fence(ctx, r, tok)
	if err != nil {
		return fmt.Errorf("fence: %w", err)
	}
	if measure {
		w.hist[kind].record(time.Since(t0))
	}
	switch {
	case ok && stale:
		st.check.Violate(fmt.Sprintf("resource %d: stale token %d accepted (an accepted write had %d)", r, tok, tok+1))
	case ok:
		st.raiseMark(r, tok)
	case !stale && st.fenceOK:
		// Without grants the newest token cannot have been overtaken.
		st.check.Violate(fmt.Sprintf("resource %d: current token %d refused", r, tok))
	}
	if measure {
		if ok {
			w.accepted++
		} else {
			w.rejected++
		}
	}
	return nil
}
