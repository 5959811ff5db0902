package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fenceview/fenceview/internal/proof"
	"github.com/fenceview/fenceview/internal/servertest"
)

// Linearizability: concurrent clients take short leases and write with
// their tokens to a register per resource, abandon leases to let them
// expire, pause past them, and keep old tokens to write with much later.
// The recorded history is checked with porcupine against a fenced
// register (internal/proof): a write with token t lands only if t >= every
// token already applied, and no stale write is ever visible after a newer
// one. Once through the server (the fence endpoint, with the grants and
// reads of the resource's mark), once through the WebAssembly guard of
// examples/wasmplugin (PUT and GET of a value). Both run as processes.
//
// FENCEVIEW_LIN_OPS sets the operations per history (default 400);
// FENCEVIEW_LIN_SEED replays a run's choices.
func TestLinearizability(t *testing.T) {
	ops, seed := processHarness(t, "FENCEVIEW_LIN_OPS", 400, "FENCEVIEW_LIN_SEED")

	srv := servertest.StartProcess(t, servertest.ProcessOptions{})
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: time.Minute}

	t.Run("server", func(t *testing.T) {
		target := &linTarget{
			server: srv.URL, hc: hc, model: proof.FenceModel, grants: true, prefix: "lin-server-",
			write: func(res string, token int64, _ string) (proof.Output, error) {
				req, _ := http.NewRequest("POST", srv.URL+"/v1/fence/"+res, nil)
				req.Header.Set("X-Fencing-Token", strconv.FormatInt(token, 10))
				return writeOutcome(hc, req)
			},
			read: func(res string) (proof.Output, error) {
				resp, err := hc.Get(srv.URL + "/v1/resources/" + res)
				if err != nil {
					return proof.Output{}, err
				}
				defer resp.Body.Close()
				var b struct{ HighWaterMark, LastToken int64 }
				switch resp.StatusCode {
				case http.StatusNotFound:
				case http.StatusOK:
					if err := json.NewDecoder(resp.Body).Decode(&b); err != nil {
						return proof.Output{}, err
					}
				default:
					return proof.Output{}, unexpected(resp)
				}
				return proof.Output{Token: b.HighWaterMark, Last: b.LastToken}, nil
			},
		}
		target.run(t, ops, seed)
	})

	t.Run("wasm plugin", func(t *testing.T) {
		plugin := startPluginProcess(t, srv.URL)
		target := &linTarget{
			server: srv.URL, hc: hc, model: proof.KVModel, prefix: "lin-plugin-",
			write: func(res string, token int64, value string) (proof.Output, error) {
				req, _ := http.NewRequest("PUT", plugin+"/kv/"+res, strings.NewReader(value))
				req.Header.Set("X-Fencing-Token", strconv.FormatInt(token, 10))
				return writeOutcome(hc, req)
			},
			read: func(res string) (proof.Output, error) {
				resp, err := hc.Get(plugin + "/kv/" + res)
				if err != nil {
					return proof.Output{}, err
				}
				defer resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusNotFound:
					return proof.Output{}, nil
				case http.StatusOK:
					v, err := io.ReadAll(resp.Body)
					return proof.Output{Value: string(v), Found: true}, err
				}
				return proof.Output{}, unexpected(resp)
			},
		}
		target.run(t, ops, seed+1)
	})
}

// linTarget is one register implementation under test. Tokens always come
// from the server's grants.
type linTarget struct {
	server string
	hc     *http.Client
	model  porcupine.Model
	grants bool   // record grants in the history (the server's model has them)
	prefix string // of the resource ids
	write  func(res string, token int64, value string) (proof.Output, error)
	read   func(res string) (proof.Output, error)
}

const (
	linClients   = 6
	linResources = 3
)

func (tg *linTarget) run(t *testing.T, ops int, seed uint64) {
	// Count the leases that ran out during the run, from the event stream:
	// the history must include real expiries, not only releases.
	ws := dialStream(t, tg.server, "", nil)
	var expired atomic.Int64
	firstExpiry := make(chan struct{})
	go func() {
		for {
			var e event
			if err := ws.conn.ReadJSON(&e); err != nil {
				return // closed at cleanup
			}
			if e.Type == "expire" && strings.HasPrefix(e.ResourceID, tg.prefix) && expired.Add(1) == 1 {
				close(firstExpiry)
			}
		}
	}()

	start := time.Now()
	rec := proof.NewRecorder()
	var wg sync.WaitGroup
	for c := range linClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := tg.client(c, rand.New(rand.NewPCG(seed, uint64(c))), rec, ops); err != nil {
				t.Errorf("client %d: %v", c, err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	ran := time.Since(start)

	history := rec.History()
	checkStart := time.Now()
	wantLinearizable(t, tg.model, history, "a fenced register")
	checked := time.Since(checkStart)

	// The checker can fail on this very history: report one refused write
	// that provably came after a newer accepted one as accepted instead.
	stale := proof.ProvablyStale(history)
	if len(stale) == 0 {
		t.Fatal("the workload produced no write refused after a newer one; the pauses did not happen")
	}
	wantRefused(t, tg.model, proof.Accept(history, stale[0]), "a stale write reported accepted")

	select {
	case <-firstExpiry:
	case <-time.After(hangGuard):
		t.Fatal("no lease expired during the run")
	}

	var writes, refused int
	for _, op := range history {
		if in := op.Input.(proof.Input); in.Kind == proof.Write {
			writes++
			if !op.Output.(proof.Output).Accepted {
				refused++
			}
		}
	}
	t.Logf("%d operations (%d writes, %d refused, %d provably stale; %d leases expired) linearizable; ran %v, checked in %v",
		len(history), writes, refused, len(stale), expired.Load(), ran.Round(time.Millisecond), checked.Round(time.Millisecond))
}

// client plays one client until the history has ops operations.
func (tg *linTarget) client(c int, rng *rand.Rand, rec *proof.Recorder, ops int) error {
	holder := fmt.Sprintf("client-%d", c)
	old := map[string][]int64{} // tokens of earlier grants, kept to write with later
	var seq atomic.Int64        // duels write from two goroutines
	value := func() string { return fmt.Sprintf("%s-%d", holder, seq.Add(1)) }
	more := func() bool { return rec.Len() < ops }

	doRead := func(res string) error {
		call := rec.Now()
		out, err := tg.read(res)
		if err != nil {
			return err
		}
		rec.Add(c, proof.Input{Resource: res, Kind: proof.Read}, call, out)
		return nil
	}
	doWrite := func(res string, token int64) error {
		in := proof.Input{Resource: res, Kind: proof.Write, Token: token, Value: value()}
		call := rec.Now()
		out, err := tg.write(res, token, in.Value)
		if err != nil {
			return err
		}
		rec.Add(c, in, call, out)
		return nil
	}

	// acquire takes the lock (re-entrant grants included) and records the
	// grant; 0 when it stayed held past the wait.
	acquire := func(res string, leaseMs int) (int64, error) {
		call := rec.Now()
		g, err := postJSON(tg.hc, tg.server+"/v1/locks/"+res+"/acquire",
			fmt.Sprintf(`{"holder":%q,"leaseMs":%d,"waitMs":5000}`, holder, leaseMs))
		if err != nil {
			return 0, err
		}
		if g.Status == http.StatusConflict {
			return 0, nil
		}
		if g.Status != http.StatusOK {
			return 0, fmt.Errorf("acquire %s: %d %s", res, g.Status, g.Raw)
		}
		if tg.grants {
			rec.Add(c, proof.Input{Resource: res, Kind: proof.Grant}, call, proof.Output{Token: tokenOf(g)})
		}
		return tokenOf(g), nil
	}

	for more() {
		res := tg.prefix + strconv.Itoa(rng.IntN(linResources))
		switch x := rng.IntN(100); {
		case x < 15:
			if err := doRead(res); err != nil {
				return err
			}
			continue
		case x < 30 && len(old[res]) > 0:
			// A logical pause: a token from an earlier hold, written only
			// now, after this client (and others) wrote with newer ones.
			if err := doWrite(res, old[res][rng.IntN(len(old[res]))]); err != nil {
				return err
			}
			continue
		}

		// A hold: a short lease, a few writes and reads under it.
		lease := 20 + rng.IntN(200)
		token, err := acquire(res, lease)
		if err != nil {
			return err
		}
		if token == 0 {
			continue // still held when the wait ran out
		}
		holds := 1
		if rng.IntN(4) == 0 {
			// A duel: a re-entrant grant takes a newer token, and the two
			// tokens write at once, as a holder waking from a pause races
			// the next holder. Either order is legal; a mix of the two is
			// not, and the read after both tells.
			newer, err := acquire(res, lease)
			if err != nil {
				return err
			}
			if newer != 0 {
				errs := make(chan error, 2)
				go func() { errs <- doWrite(res, token) }()
				go func() { errs <- doWrite(res, newer) }()
				if err := errors.Join(<-errs, <-errs); err != nil {
					return err
				}
				if err := doRead(res); err != nil {
					return err
				}
				old[res] = append(old[res], token)
				token = newer
				holds++
			}
		}
		for w := rng.IntN(3); w >= 0 && more(); w-- {
			if rng.IntN(5) == 0 {
				// A real pause past the lease: the lock may be granted to
				// someone else, who may write first.
				time.Sleep(time.Duration(lease+rng.IntN(50)) * time.Millisecond)
			}
			if rng.IntN(4) == 0 {
				if err := doRead(res); err != nil {
					return err
				}
				continue
			}
			if err := doWrite(res, token); err != nil {
				return err
			}
		}
		old[res] = append(old[res], token)
		if rng.IntN(3) > 0 {
			// Release (refused when the lease ran out meanwhile); the rest
			// abandon the lease and let it expire.
			for range holds {
				if _, err := postJSON(tg.hc, tg.server+"/v1/locks/"+res+"/release", fmt.Sprintf(`{"holder":%q}`, holder)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// writeOutcome sends a fenced write and reads the decision.
func writeOutcome(hc *http.Client, req *http.Request) (proof.Output, error) {
	resp, err := hc.Do(req)
	if err != nil {
		return proof.Output{}, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		io.Copy(io.Discard, resp.Body)
		return proof.Output{Accepted: true}, nil
	case http.StatusConflict:
		var b struct {
			Reason   string `json:"reason"`
			Required int64  `json:"required"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&b); err != nil {
			return proof.Output{}, err
		}
		return proof.Output{Reason: b.Reason, Required: b.Required}, nil
	}
	return proof.Output{}, unexpected(resp)
}

func unexpected(resp *http.Response) error {
	b, _ := io.ReadAll(resp.Body)
	return fmt.Errorf("%s %s: %d %s", resp.Request.Method, resp.Request.URL, resp.StatusCode, b)
}

// Linearizability of semaphores, multi-locks and elections through the
// real server, a process: concurrent clients take a semaphore's permits,
// multi-locks over overlapping sets, and an election's leadership, while
// observers read their state and the event stream. The recorded histories are checked
// with porcupine against internal/proof's models (never more holders than
// permits, a slot's tokens strictly increase; a multi-lock all or nothing
// for every reader; at most one leader per term, terms strictly increase),
// and the streams against the answers the clients got (no partial set, no
// change missing or out of order). Each check is shown able to fail on its
// own history: one token reported twice makes it illegal.
//
// FENCEVIEW_LIN_OPS sets the operations per history (default 400);
// FENCEVIEW_LIN_SEED replays a run's choices.
func TestPrimitivesLinearizability(t *testing.T) {
	ops, seed := processHarness(t, "FENCEVIEW_LIN_OPS", 400, "FENCEVIEW_LIN_SEED")
	srv := servertest.StartProcess(t, servertest.ProcessOptions{})
	newTarget := func() *primTarget {
		return &primTarget{rec: proof.NewRecorder(), via: func() string { return srv.URL }, hc: linHC}
	}

	t.Run("semaphore", func(t *testing.T) {
		tg := newTarget()
		tg.run(6, seed, func(c int, rng *rand.Rand) { tg.semaphoreClient(c, rng, ops) })
		tg.check(t, proof.SemaphoreModel(semPermits), semTokens)
		tg.requireSeen(t, "an acquire refused with every permit taken", func(in proof.Call, out proof.Result) bool {
			return in.Op == proof.OpAcquire && !out.OK && !out.Unknown
		})
	})

	t.Run("multi-lock", func(t *testing.T) {
		tg := newTarget()
		log := recordStream(t, srv.URL, "")
		tg.runMulti(seed+1, ops)
		// A last multi-lock over every lock, once all are free: when its
		// grants are on the stream, so is everything before them.
		all := []int{0, 1, 2, 3, 4}
		if !tg.lockAll(99, "sentinel", all, 30000) {
			t.Fatal("the last multi-lock was not granted")
		}
		events := log.until(t, func(e proof.StreamEvent) bool {
			return e.Type == "grant" && e.Holder == "sentinel" && e.ResourceID == multiLockID(4)
		})
		tg.check(t, proof.MultiLockModel(), multiTokens)
		if err := proof.CheckMultiStream(onResources(events, "ml-"), tg.rec.History(), multiLockID); err != nil {
			t.Fatalf("the event stream: %v", err)
		}
		tg.requireSeen(t, "a multi-lock refused, naming the locks held", func(in proof.Call, out proof.Result) bool {
			return in.Op == proof.OpAcquire && !out.OK && !out.Unknown && len(out.Locks) > 0
		})
		tg.requireSeen(t, "a reader seeing a lock held", func(in proof.Call, out proof.Result) bool {
			return in.Op == proof.OpRead && out.Holder != ""
		})
	})

	t.Run("shared lock", func(t *testing.T) { sharedLock(t, newTarget, ops, seed+3) })

	t.Run("election", func(t *testing.T) {
		tg := newTarget()
		log := recordStream(t, srv.URL, "?resource="+electionName)
		tg.run(5, seed+2, func(c int, rng *rand.Rand) { tg.electionClient(c, rng, ops) })
		// The last campaign, once everyone resigned, ends the stream.
		call := tg.rec.Now()
		r, err := postJSON(tg.hc, srv.URL+"/v1/elections/"+electionName+"/campaign", `{"candidate":"sentinel","value":"last","leaseMs":60000,"waitMs":30000}`)
		if err != nil || r.Status != 200 {
			t.Fatalf("the last campaign: %v %d %v", err, r.Status, r.Body)
		}
		tg.rec.AddOp(99, proof.Call{Op: proof.OpAcquire, Holder: "sentinel", Value: "last"}, call, leaderResult(r.Body["leader"], true))
		events := log.until(t, func(e proof.StreamEvent) bool { return e.Type == "grant" && e.Holder == "sentinel" })
		tg.check(t, proof.ElectionModel(), electionTerms)
		if err := proof.CheckElectionStream(events, tg.rec.History()); err != nil {
			t.Fatalf("the event stream: %v", err)
		}
		tg.requireSeen(t, "a campaign refused while another leads", func(in proof.Call, out proof.Result) bool {
			return in.Op == proof.OpAcquire && !out.OK && !out.Unknown
		})
		tg.requireSeen(t, "a proclaim by the leader", func(in proof.Call, out proof.Result) bool {
			return in.Op == proof.OpProclaim && out.OK
		})
	})
}

// sharedLock is TestPrimitivesLinearizability's shared lock: clients
// take it shared and exclusive (never waiting: the admission queue's
// order is the fuzz's), observers read it, and the history is checked
// against proof.RWLockModel (no writer overlaps any hold, the readers of a
// phase share its token, successive phases and writers go up).
func sharedLock(t *testing.T, newTarget func() *primTarget, ops int, seed uint64) {
	tg := newTarget()
	tg.run(6, seed, func(c int, rng *rand.Rand) { tg.rwClient(c, rng, ops) })
	tg.rwLast(6)
	tg.check(t, proof.RWLockModel(), rwTokens)
	tg.requireSeen(t, "two readers holding at once", func(in proof.Call, out proof.Result) bool {
		return in.Op == proof.OpRead && out.Held[1].Holder != ""
	})
	tg.requireSeen(t, "a writer refused while readers hold", func(in proof.Call, out proof.Result) bool {
		return in.Op == proof.OpAcquire && !in.Shared && !out.OK && !out.Unknown
	})
}

const rwName = "lin-rw"

// rwLock is the shared lock tg's clients take: rwName, or another name
// for a run again on the same server (a fresh lock, as the model starts).
func (tg *primTarget) rwLock() string {
	if tg.rw != "" {
		return tg.rw
	}
	return rwName
}

// rwClient takes the shared lock in either mode, sometimes twice, reads
// it, and releases what it holds.
func (tg *primTarget) rwClient(c int, rng *rand.Rand, ops int) {
	for tg.rec.Len() < ops {
		x := rng.IntN(100)
		if x < 20 {
			tg.readRW(c)
			continue
		}
		tg.rwHold(c, x < 70, 1+rng.IntN(2), rng.IntN(2) == 0) // a second acquire is re-entrant
	}
}

// rwLast is one more writer once the clients are done: a run whose
// readers overlapped throughout (writers never wait) held one read phase,
// and this grant's token is the next, so the history has two tokens.
func (tg *primTarget) rwLast(clients int) { tg.rwHold(clients, false, 1, false) }

// rwHold acquires the shared lock as client c, times over, in one mode,
// reads it when read, and releases what it holds, and once more after an
// acquire whose outcome is unknown (a hold it may have taken).
func (tg *primTarget) rwHold(c int, shared bool, times int, read bool) {
	holder := fmt.Sprintf("rw%d", c)
	holds := 0
	for range times {
		in := proof.Call{Op: proof.OpAcquire, Holder: holder, Shared: shared}
		r, call, ok := tg.change(in, "/v1/locks/"+tg.rwLock()+"/acquire",
			fmt.Sprintf(`{"holder":%q,"leaseMs":%d,"shared":%v}`, holder, longLeaseMs, shared))
		if !ok {
			if !tg.beforeAnyLock(r) {
				holds++ // the outcome is unknown: it may hold, so it releases once more
			}
			break
		}
		if r.Status != 200 {
			refusal(r, "acquire")
			tg.rec.AddOp(c, in, call, proof.Result{})
			break
		}
		f, _ := r.Body["fencing"].(map[string]any)
		tok, _ := f["token"].(float64)
		tg.rec.AddOp(c, in, call, proof.Result{OK: true, Tokens: []int64{int64(tok)}})
		holds++
	}
	if read {
		tg.readRW(c)
	}
	for range holds {
		in := proof.Call{Op: proof.OpRelease, Holder: holder, Shared: shared}
		r, call, ok := tg.change(in, "/v1/locks/"+tg.rwLock()+"/release", fmt.Sprintf(`{"holder":%q}`, holder))
		if !ok {
			break
		}
		if r.Status != 200 {
			refusal(r, "release")
		}
		tg.rec.AddOp(c, in, call, proof.Result{OK: r.Status == 200})
	}
}

// readRW records the shared lock as GET /v1/locks shows it: the writer,
// or the readers with the phase's token, and the last token issued.
func (tg *primTarget) readRW(c int) {
	r, call, ok := tg.read("/v1/locks/" + tg.rwLock())
	if !ok {
		return
	}
	var out proof.Result
	last, _ := r.Body["token"].(float64)
	out.Token = int64(last)
	if r.Body["shared"] == true {
		holders, _ := r.Body["holders"].([]any)
		for i, h := range holders {
			out.Held[i] = proof.Holding{Holder: h.(map[string]any)["holder"].(string), Token: out.Token}
		}
	} else if h, ok := r.Body["holder"].(string); ok {
		out.Holder = h
	}
	tg.rec.AddOp(c, proof.Call{Op: proof.OpRead}, call, out)
}

func rwTokens(h []porcupine.Operation) ([]porcupine.Operation, bool) {
	return reuseToken(h, func(_ proof.Call, out proof.Result) map[string]int64 {
		return map[string]int64{"lock": out.Tokens[0]}
	}, func(_ proof.Call, out proof.Result, _ string, tok int64) proof.Result {
		out.Tokens = []int64{tok}
		return out
	})
}

var linHC = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: time.Minute}

const (
	semName      = "lin-sem"
	semPermits   = 3
	multiLocks   = 5
	electionName = "lin-election"
	longLeaseMs  = 600000 // no lease runs out during a run: every change is a client's
)

func multiLockID(i int) string { return "ml-" + strconv.Itoa(i) }

// primTarget drives the primitives of a server, or of any node of a
// cluster (via), and records what it was answered.
type primTarget struct {
	rec *proof.Recorder
	via func() string
	hc  *http.Client
	// notApplied, in a cluster, are the 503s given before a request
	// reached any lock: nothing happened.
	notApplied map[string]bool
	unknown    atomic.Int64
	rw         string // the shared lock's name (rwLock)
}

func (tg *primTarget) run(clients int, seed uint64, client func(c int, rng *rand.Rand)) {
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client(c, rand.New(rand.NewPCG(seed, uint64(c))))
		}()
	}
	wg.Wait()
}

// change posts body to path. ok is false when the outcome is unknown (the
// answer was lost with a node, or a 503 that may have been applied: it is
// recorded so) or nothing happened (a 503 before any lock: not recorded).
func (tg *primTarget) change(in proof.Call, path, body string) (r response, call int64, ok bool) {
	call = tg.rec.Now()
	r, err := postJSON(tg.hc, tg.via()+path, body)
	if err == nil && tg.beforeAnyLock(r) {
		time.Sleep(20 * time.Millisecond) // pacing while a cluster elects
		return r, call, false
	}
	if err != nil || r.Status == 503 || r.Status == 502 {
		tg.rec.AddUnknownOp(in, call)
		tg.unknown.Add(1)
		time.Sleep(20 * time.Millisecond)
		return r, call, false
	}
	return r, call, true
}

// beforeAnyLock reports whether r is a 503 given before the request
// reached any lock: nothing happened.
func (tg *primTarget) beforeAnyLock(r response) bool {
	return r.Status == 503 && tg.notApplied[fmt.Sprint(r.Body["error"])]
}

// read gets path; ok is false when no answer came (a read changes nothing).
func (tg *primTarget) read(path string) (response, int64, bool) {
	call := tg.rec.Now()
	resp, err := tg.hc.Get(tg.via() + path)
	if err != nil {
		return response{}, call, false
	}
	r := decodeResponse(resp)
	return r, call, r.Status == 200 || r.Status == 404
}

// getVia is a GET answered by the server at url (any build: the cluster
// tests' getJSON is not in the race build).
func getVia(url string) (response, error) {
	resp, err := linHC.Get(url)
	if err != nil {
		return response{}, err
	}
	return decodeResponse(resp), nil
}

func refusal(r response, what string) {
	if r.Status != 409 {
		panic(fmt.Sprintf("%s: %d %v", what, r.Status, r.Body))
	}
}

// check checks the history against model, then that the model refuses the
// same history with one token reported twice (reuse makes that change).
func (tg *primTarget) check(t *testing.T, model porcupine.Model, reuse func([]porcupine.Operation) ([]porcupine.Operation, bool)) {
	t.Helper()
	if !tg.checkCovered(t, model, reuse) {
		t.Fatal("no two grants of one lock in the history: the workload did not exercise it")
	}
}

// checkCovered is check, reporting false instead of failing when the
// history holds no two grants of one lock with distinct tokens to reuse.
func (tg *primTarget) checkCovered(t *testing.T, model porcupine.Model, reuse func([]porcupine.Operation) ([]porcupine.Operation, bool)) bool {
	t.Helper()
	history := tg.rec.History()
	start := time.Now()
	res, viz := proof.Check(model, history, 10*time.Minute)
	switch res {
	case porcupine.Illegal:
		// Whether the changes alone are linearizable tells a reader shown
		// a state that never was from a change that went wrong.
		changes := slices.DeleteFunc(slices.Clone(history), func(op porcupine.Operation) bool { return op.Input.(proof.Call).Op == proof.OpRead })
		alone, _ := proof.Check(model, changes, 10*time.Minute)
		t.Fatalf("%d operations are not linearizable (the %d changes alone: %v); visualization: %s", len(history), len(changes), alone, viz)
	case porcupine.Unknown:
		t.Fatalf("porcupine gave up on %d operations", len(history))
	}
	bad, ok := reuse(history)
	if !ok {
		return false
	}
	wantRefused(t, model, bad, "a token reported twice")
	t.Logf("%d operations (%d outcomes unknown) linearizable, checked in %v", len(history), tg.unknown.Load(), time.Since(start).Round(time.Millisecond))
	return true
}

// wantLinearizable fails t unless history is linearizable under model,
// which what names for the failure.
func wantLinearizable(t *testing.T, model porcupine.Model, history []porcupine.Operation, what string) {
	t.Helper()
	switch res, viz := proof.Check(model, history, 10*time.Minute); res {
	case porcupine.Illegal:
		t.Fatalf("%d operations are not linearizable as %s; visualization: %s", len(history), what, viz)
	case porcupine.Unknown:
		t.Fatalf("porcupine gave up on %d operations", len(history))
	}
}

// wantRefused fails t unless model refuses bad, a history broken on
// purpose (how says how): the checker can see what the test looks for.
func wantRefused(t *testing.T, model porcupine.Model, bad []porcupine.Operation, how string) {
	t.Helper()
	res, viz := proof.Check(model, bad, 10*time.Minute)
	if res != porcupine.Illegal {
		t.Fatalf("porcupine accepts the history with %s: %v", how, res)
	}
	os.RemoveAll(filepath.Dir(viz))
}

// requireSeen fails unless some answer in the history matches: the
// workload did what the check needs.
func (tg *primTarget) requireSeen(t *testing.T, what string, match func(proof.Call, proof.Result) bool) {
	t.Helper()
	for _, op := range tg.rec.History() {
		if match(op.Input.(proof.Call), op.Output.(proof.Result)) {
			return
		}
	}
	t.Fatalf("the workload never produced %s", what)
}

// reuseToken returns history with a later grant's token set to an earlier
// one's of the same lock (granted before the later was asked): a token
// issued twice. tokens lists a granted acquire's (lock, token) pairs;
// retoken returns a granted acquire's result with lock's token set to tok.
func reuseToken(history []porcupine.Operation, tokens func(proof.Call, proof.Result) map[string]int64,
	retoken func(in proof.Call, out proof.Result, lock string, tok int64) proof.Result) ([]porcupine.Operation, bool) {
	granted := func(op porcupine.Operation) map[string]int64 {
		in, out := op.Input.(proof.Call), op.Output.(proof.Result)
		if in.Op != proof.OpAcquire || !out.OK {
			return nil
		}
		return tokens(in, out)
	}
	for i, a := range history {
		for j := i + 1; j < len(history); j++ {
			b := history[j]
			if a.Return >= b.Call {
				continue
			}
			ta, tb := granted(a), granted(b)
			for lock, tok := range ta {
				if other, ok := tb[lock]; ok && other != tok {
					h := slices.Clone(history)
					h[j].Output = retoken(b.Input.(proof.Call), b.Output.(proof.Result), lock, tok)
					return h, true
				}
			}
		}
	}
	return nil, false
}

func semTokens(h []porcupine.Operation) ([]porcupine.Operation, bool) {
	return reuseToken(h, func(_ proof.Call, out proof.Result) map[string]int64 {
		return map[string]int64{strconv.Itoa(out.Slot): out.Tokens[0]}
	}, func(_ proof.Call, out proof.Result, _ string, tok int64) proof.Result {
		out.Tokens = []int64{tok}
		return out
	})
}

func multiTokens(h []porcupine.Operation) ([]porcupine.Operation, bool) {
	return reuseToken(h, func(in proof.Call, out proof.Result) map[string]int64 {
		m := map[string]int64{}
		for i, l := range in.Locks {
			m[strconv.Itoa(l)] = out.Tokens[i]
		}
		return m
	}, func(in proof.Call, out proof.Result, lock string, tok int64) proof.Result {
		out.Tokens = slices.Clone(out.Tokens)
		l, _ := strconv.Atoi(lock)
		out.Tokens[slices.Index(in.Locks, l)] = tok
		return out
	})
}

func electionTerms(h []porcupine.Operation) ([]porcupine.Operation, bool) {
	return reuseToken(h, func(_ proof.Call, out proof.Result) map[string]int64 {
		return map[string]int64{"term": out.Token}
	}, func(_ proof.Call, out proof.Result, _ string, tok int64) proof.Result {
		out.Token = tok
		return out
	})
}

// Semaphores.

// semaphoreClient takes permits of a semaphore of semPermits, reads its
// state under them, and releases them (now and then a slot it does not
// hold first, which must be refused).
func (tg *primTarget) semaphoreClient(c int, rng *rand.Rand, ops int) {
	holder := fmt.Sprintf("s%d", c)
	for tg.rec.Len() < ops {
		if rng.IntN(100) < 15 {
			tg.readSemaphore(c)
			continue
		}
		in := proof.Call{Op: proof.OpAcquire, Holder: holder}
		r, call, ok := tg.change(in, "/v1/semaphores/"+semName+"/acquire",
			fmt.Sprintf(`{"holder":%q,"permits":%d,"leaseMs":%d,"waitMs":%d}`, holder, semPermits, longLeaseMs, rng.IntN(2)*200))
		if !ok {
			tg.releaseMySlots(c, holder) // it may hold a slot it was never told of
			continue
		}
		if r.Status != 200 {
			refusal(r, "semaphore acquire")
			tg.rec.AddOp(c, in, call, proof.Result{})
			continue
		}
		slot := int(r.num("slot"))
		if r.Body["resourceId"] != semName+"#"+strconv.Itoa(slot) || r.Body["semaphore"] != semName {
			panic(fmt.Sprintf("semaphore grant: %v", r.Body))
		}
		tg.rec.AddOp(c, in, call, proof.Result{OK: true, Slot: slot, Tokens: []int64{tokenOf(r)}})
		if rng.IntN(3) == 0 {
			tg.readSemaphore(c)
		}
		if rng.IntN(5) == 0 {
			tg.releaseSlot(c, holder, (slot+1+rng.IntN(semPermits-1))%semPermits)
		}
		tg.releaseSlot(c, holder, slot)
	}
}

func (tg *primTarget) releaseSlot(c int, holder string, slot int) {
	in := proof.Call{Op: proof.OpRelease, Holder: holder, Slot: slot}
	r, call, ok := tg.change(in, "/v1/semaphores/"+semName+"/release", fmt.Sprintf(`{"holder":%q,"slot":%d}`, holder, slot))
	if !ok {
		return
	}
	if r.Status != 200 {
		refusal(r, "semaphore release")
	}
	tg.rec.AddOp(c, in, call, proof.Result{OK: r.Status == 200})
}

// releaseMySlots, after an acquire whose outcome is unknown, releases
// every slot the state shows held by holder.
func (tg *primTarget) releaseMySlots(c int, holder string) {
	held, ok := tg.readSemaphore(c)
	if !ok {
		return
	}
	for slot, h := range held {
		if h.Holder == holder {
			tg.releaseSlot(c, holder, slot)
		}
	}
}

func (tg *primTarget) readSemaphore(c int) ([proof.ModelSlots]proof.Holding, bool) {
	var held [proof.ModelSlots]proof.Holding
	r, call, ok := tg.read("/v1/semaphores/" + semName)
	if !ok {
		return held, false
	}
	if r.Status == 200 {
		list, _ := r.Body["held"].([]any)
		for _, x := range list {
			s := x.(map[string]any)
			held[int(s["slot"].(float64))] = proof.Holding{Holder: s["holder"].(string), Token: int64(s["token"].(float64))}
		}
	}
	tg.rec.AddOp(c, proof.Call{Op: proof.OpRead}, call, proof.Result{Held: held})
	return held, true
}

// Multi-locks.

// runMulti runs 4 clients of multiClient and 2 readers of single locks,
// until the clients have made about ops multi-lock requests: the readers,
// quicker, would otherwise fill the history alone.
func (tg *primTarget) runMulti(seed uint64, ops int) {
	var changes atomic.Int64
	var writing sync.WaitGroup
	writing.Add(4)
	done := make(chan struct{})
	go func() { writing.Wait(); close(done) }()
	tg.run(6, seed, func(c int, rng *rand.Rand) {
		if c >= 4 {
			tg.lockReader(c, rng, done)
			return
		}
		defer writing.Done()
		tg.multiClient(c, rng, func() bool { return changes.Add(1) <= int64(ops) })
	})
}

// multiClient takes sets of 1 to 4 of the locks in any order, sometimes
// waiting, reads one under them, and releases the set (now and then with
// a lock it does not hold, which must be named not held).
func (tg *primTarget) multiClient(c int, rng *rand.Rand, more func() bool) {
	holder := fmt.Sprintf("m%d", c)
	for more() {
		set := rng.Perm(multiLocks)[:1+rng.IntN(4)]
		if !tg.lockAll(c, holder, set, rng.IntN(2)*300) {
			continue
		}
		if rng.IntN(2) == 0 {
			tg.readLock(c, rng.IntN(multiLocks))
		}
		release := set
		if rng.IntN(4) == 0 && len(set) < multiLocks {
			for l := range multiLocks {
				if !slices.Contains(set, l) {
					release = append(slices.Clone(set), l)
					break
				}
			}
		}
		tg.unlockAll(c, holder, release)
	}
}

// lockAll asks for set and reports whether it was granted.
func (tg *primTarget) lockAll(c int, holder string, set []int, waitMs int) bool {
	in := proof.Call{Op: proof.OpAcquire, Holder: holder, Locks: set}
	r, call, ok := tg.change(in, "/v1/locks/acquire-all",
		fmt.Sprintf(`{"resources":%s,"holder":%q,"leaseMs":%d,"waitMs":%d}`, lockList(set), holder, longLeaseMs, waitMs))
	if !ok {
		// It may hold the set without knowing: give up what it holds.
		for tg.unlockAll(c, holder, []int{0, 1, 2, 3, 4}) > 0 {
		}
		return false
	}
	if r.Status != 200 {
		refusal(r, "acquire-all")
		var held []int
		list, _ := r.Body["held"].([]any)
		for _, x := range list {
			held = append(held, lockIndex(x.(map[string]any)["resourceId"]))
		}
		tg.rec.AddOp(c, in, call, proof.Result{Locks: held})
		return false
	}
	grants, _ := r.Body["grants"].([]any)
	out := proof.Result{OK: true}
	for i, x := range grants {
		g := x.(map[string]any)
		if lockIndex(g["resourceId"]) != set[i] || g["holder"] != holder {
			panic(fmt.Sprintf("acquire-all %v: grant %d is %v", set, i, g))
		}
		out.Tokens = append(out.Tokens, tokenOf(response{Body: g}))
	}
	tg.rec.AddOp(c, in, call, out)
	return true
}

// unlockAll releases set and returns how many locks were released (-1
// when the outcome is unknown).
func (tg *primTarget) unlockAll(c int, holder string, set []int) int {
	in := proof.Call{Op: proof.OpRelease, Holder: holder, Locks: set}
	r, call, ok := tg.change(in, "/v1/locks/release-all", fmt.Sprintf(`{"resources":%s,"holder":%q}`, lockList(set), holder))
	if !ok {
		return -1
	}
	if r.Status != 200 {
		panic(fmt.Sprintf("release-all: %d %v", r.Status, r.Body))
	}
	out := proof.Result{OK: true}
	list, _ := r.Body["released"].([]any)
	for _, id := range list {
		out.Locks = append(out.Locks, lockIndex(id))
	}
	tg.rec.AddOp(c, in, call, out)
	return len(out.Locks)
}

// lockReader reads single locks until done is closed.
func (tg *primTarget) lockReader(c int, rng *rand.Rand, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		default:
		}
		tg.readLock(c, rng.IntN(multiLocks))
	}
}

func (tg *primTarget) readLock(c, l int) {
	r, call, ok := tg.read("/v1/locks/" + multiLockID(l))
	if !ok || r.Status != 200 {
		return
	}
	holder, _ := r.Body["holder"].(string)
	tg.rec.AddOp(c, proof.Call{Op: proof.OpRead, Locks: []int{l}}, call, proof.Result{Holder: holder, Token: r.num("token")})
}

func lockList(set []int) string {
	ids := make([]string, len(set))
	for i, l := range set {
		ids[i] = strconv.Quote(multiLockID(l))
	}
	return "[" + strings.Join(ids, ",") + "]"
}

func lockIndex(id any) int {
	s, _ := id.(string)
	n, err := strconv.Atoi(strings.TrimPrefix(s, "ml-"))
	if err != nil || !strings.HasPrefix(s, "ml-") {
		panic(fmt.Sprintf("not a lock of the workload: %v", id))
	}
	return n
}

// Elections.

// electionClient campaigns (sometimes waiting), proclaims new values and
// resigns; now and then it proclaims or resigns without leading, which
// must be refused. Every value is unique, so the stream names each change.
func (tg *primTarget) electionClient(c int, rng *rand.Rand, ops int) {
	candidate := fmt.Sprintf("e%d", c)
	n := 0
	value := func() string { n++; return fmt.Sprintf("%s-%d", candidate, n) }
	var term int64 // while leading
	post := func(in proof.Call, path, body string) (response, int64, bool) {
		return tg.change(in, "/v1/elections/"+electionName+path, body)
	}
	proclaim := func() {
		in := proof.Call{Op: proof.OpProclaim, Holder: candidate, Value: value()}
		r, call, ok := post(in, "/proclaim", fmt.Sprintf(`{"candidate":%q,"value":%q}`, candidate, in.Value))
		if ok {
			if r.Status != 200 {
				refusal(r, "proclaim")
			}
			tg.rec.AddOp(c, in, call, leaderResult(r.Body["leader"], r.Status == 200))
		}
	}
	resign := func() {
		in := proof.Call{Op: proof.OpRelease, Holder: candidate}
		r, call, ok := post(in, "/resign", fmt.Sprintf(`{"candidate":%q}`, candidate))
		if ok {
			if r.Status != 200 {
				refusal(r, "resign")
			}
			tg.rec.AddOp(c, in, call, proof.Result{OK: r.Status == 200, Token: term})
			term = 0
		}
	}
	campaign := func(waitMs int) bool {
		in := proof.Call{Op: proof.OpAcquire, Holder: candidate, Value: value()}
		r, call, ok := post(in, "/campaign", fmt.Sprintf(`{"candidate":%q,"value":%q,"leaseMs":%d,"waitMs":%d}`, candidate, in.Value, longLeaseMs, waitMs))
		if !ok {
			return false
		}
		if r.Status != 200 {
			refusal(r, "campaign")
		}
		out := leaderResult(r.Body["leader"], r.Status == 200)
		tg.rec.AddOp(c, in, call, out)
		if out.OK {
			term = out.Token
		}
		return out.OK
	}
	for tg.rec.Len() < ops {
		switch x := rng.IntN(100); {
		case x < 15:
			tg.readLeader(c)
			continue
		case x < 22:
			proclaim() // not leading: refused
			continue
		case x < 27:
			resign() // not leading: refused
			continue
		}
		if !campaign(rng.IntN(2) * 300) {
			continue
		}
		for range rng.IntN(3) {
			proclaim()
		}
		if rng.IntN(4) == 0 {
			campaign(0) // by the leader: same term, a new value
		}
		if rng.IntN(3) == 0 {
			tg.readLeader(c)
		}
		resign()
	}
}

func (tg *primTarget) readLeader(c int) {
	r, call, ok := tg.read("/v1/elections/" + electionName)
	if !ok || r.Status != 200 {
		return
	}
	out := leaderResult(r.Body["leader"], false)
	tg.rec.AddOp(c, proof.Call{Op: proof.OpRead}, call, out)
}

// leaderResult is a leader object of an answer (a campaign's, a refusal's,
// a read's) as the election model reads it.
func leaderResult(leader any, ok bool) proof.Result {
	l, _ := leader.(map[string]any)
	out := proof.Result{OK: ok}
	if l != nil {
		out.Holder, _ = l["candidate"].(string)
		out.Value, _ = l["value"].(string)
		term, _ := l["term"].(float64)
		out.Token = int64(term)
	}
	return out
}

// streamLog records the event stream of a server.
type streamLog struct {
	mu      sync.Mutex
	events  []proof.StreamEvent
	changed chan struct{} // closed and replaced at each event
}

func recordStream(t *testing.T, base, query string) *streamLog {
	ws := dialStream(t, base, query, nil)
	l := &streamLog{changed: make(chan struct{})}
	go func() {
		for {
			var e event
			if err := ws.conn.ReadJSON(&e); err != nil {
				return // closed at cleanup
			}
			se := proof.StreamEvent{Seq: e.Seq, Type: e.Type, ResourceID: e.ResourceID, Holder: e.Holder, Token: e.Token}
			if e.Value != nil {
				se.Value = *e.Value
			}
			l.mu.Lock()
			l.events = append(l.events, se)
			close(l.changed)
			l.changed = make(chan struct{})
			l.mu.Unlock()
		}
	}()
	return l
}

// until waits for an event that matches and returns the events so far.
func (l *streamLog) until(t *testing.T, match func(proof.StreamEvent) bool) []proof.StreamEvent {
	t.Helper()
	deadline := time.After(hangGuard)
	for {
		l.mu.Lock()
		events, changed := slices.Clone(l.events), l.changed
		l.mu.Unlock()
		if slices.ContainsFunc(events, match) {
			return events
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the awaited event never came; %d events", len(events))
		}
	}
}

func onResources(events []proof.StreamEvent, prefix string) []proof.StreamEvent {
	return slices.DeleteFunc(slices.Clone(events), func(e proof.StreamEvent) bool { return !strings.HasPrefix(e.ResourceID, prefix) })
}
