package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fenceview/fenceview/internal/proof"
	"github.com/fenceview/fenceview/internal/servertest"
)

// The crash harness: many clients grant, fence and release over many
// resources while the real server is SIGKILLed at random instants and
// restarted on the same file. After every restart, every token issued is
// above every token any client was given, and every high-water mark is at
// least the highest token a fence call was told was accepted.
//
// FENCEVIEW_CRASH_CYCLES sets the number of kills (default 20);
// FENCEVIEW_CRASH_SEED replays a run. The power-cut harness
// (powercut_test.go) runs the same load and checks across power cuts.
func TestCrashHarness(t *testing.T) {
	cycles, seed := processHarness(t, "FENCEVIEW_CRASH_CYCLES", 20, "FENCEVIEW_CRASH_SEED")
	rng := rand.New(rand.NewPCG(seed, seed))
	load := newCrashLoad()
	crashCycles(t, cycles, func(url string) error { return load.check(t, url) }, func(url string, kill func()) {
		load.run(url, rng.Uint64(), 1+rng.IntN(300), kill)
	})
	t.Logf("%d acknowledged grants and accepted writes checked across %d kills", load.acknowledged, cycles)
}

// crashCycles starts the server cycles+1 times on one database: after
// every start the load's promises must hold (check), and every start but
// the last is SIGKILLed during a run of the load (run calls kill at a
// random instant). It returns the last process, still running.
func crashCycles(t *testing.T, cycles int, check func(url string) error, run func(url string, kill func())) *servertest.Process {
	t.Helper()
	p := servertest.StartProcess(t, servertest.ProcessOptions{})
	for cycle := 0; ; cycle++ {
		if err := check(p.URL); err != nil {
			t.Fatalf("after kill %d: %v", cycle, err)
		}
		if cycle == cycles {
			return p
		}
		run(p.URL, p.Kill)
		p = p.Restart()
	}
}

// crashLoad is the harness's load and what its clients were told: the
// promises a restarted server must keep.
type crashLoad struct {
	mu           sync.Mutex
	given        map[string]int64 // highest token any client was given, per resource
	accepted     map[string]int64 // highest token a fence call was told was accepted
	acknowledged int              // grants and accepted writes, all cycles
}

// The load: clients granting, fencing and releasing over resources.
const crashClients, crashResources = 16, 32

func newCrashLoad() *crashLoad {
	return &crashLoad{given: map[string]int64{}, accepted: map[string]int64{}}
}

// run loads the server at url until acks operations are acknowledged, then
// calls stop, which ends the server, and returns once every client has
// stopped.
func (l *crashLoad) run(url string, seed uint64, acks int, stop func()) {
	acked := make(chan struct{}, crashClients)
	var wg sync.WaitGroup
	for c := 0; c < crashClients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			client := &http.Client{Timeout: 10 * time.Second}
			holder := fmt.Sprintf("client-%d", c)
			ack := func() {
				l.mu.Lock()
				l.acknowledged++
				l.mu.Unlock()
				select {
				case acked <- struct{}{}:
				default:
				}
			}
			for {
				res := fmt.Sprintf("res-%d", rng.IntN(crashResources))
				// Half the holds are shared (readers of one phase share
				// its token), and their fences are reads.
				shared := rng.IntN(2) == 0
				g, err := postJSON(client, url+"/v1/locks/"+res+"/acquire", fmt.Sprintf(`{"holder":%q,"leaseMs":%d,"shared":%v}`, holder, 50+rng.IntN(500), shared))
				if err != nil {
					return // killed
				}
				if g.Status != 200 {
					continue
				}
				tok := tokenOf(g)
				l.mu.Lock()
				l.given[res] = max(l.given[res], tok)
				l.mu.Unlock()
				ack()
				for w := rng.IntN(3); w >= 0; w-- {
					access := "write"
					if shared {
						access = "read"
					}
					f, err := postJSON(client, url+"/v1/fence/"+res, fmt.Sprintf(`{"token":%d,"access":%q}`, tok, access))
					if err != nil {
						return
					}
					if f.Status == 200 {
						l.mu.Lock()
						l.accepted[res] = max(l.accepted[res], tok)
						l.mu.Unlock()
						ack()
					}
				}
				if _, err := postJSON(client, url+"/v1/locks/"+res+"/release", fmt.Sprintf(`{"holder":%q}`, holder)); err != nil {
					return
				}
			}
		}(c)
	}
	for i := 0; i < acks; i++ {
		<-acked
	}
	stop()
	wg.Wait()
}

// check returns the first promise the restarted server at url broke, nil
// if it kept them all; the grant it takes on each resource to see that
// the next token is higher is given like any other.
func (l *crashLoad) check(t *testing.T, url string) error {
	t.Helper()
	for res, want := range l.accepted {
		r := doRequest(t, "GET", url+"/v1/resources/"+res, nil)
		if r.num("highWaterMark") < want {
			return fmt.Errorf("%s mark %d below the acknowledged %d", res, r.num("highWaterMark"), want)
		}
	}
	for res, want := range l.given {
		r := doRequest(t, "GET", url+"/v1/resources/"+res, nil)
		if r.num("lastToken") < want {
			return fmt.Errorf("%s last token %d below the given %d", res, r.num("lastToken"), want)
		}
		// The next grant is above everything given.
		doRequest(t, "POST", url+"/v1/locks/"+res+"/expire", nil)
		g := doRequest(t, "POST", url+"/v1/locks/"+res+"/acquire", map[string]any{"holder": "checker", "leaseMs": 1})
		if g.Status != 200 || tokenOf(g) <= want {
			return fmt.Errorf("grant on %s = %d %s, highest given before %d", res, g.Status, g.Raw, want)
		}
		l.given[res] = tokenOf(g)
		doRequest(t, "POST", url+"/v1/locks/"+res+"/release", map[string]any{"holder": "checker"})
	}
	return nil
}

func postJSON(client *http.Client, url, body string) (response, error) {
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return response{}, err
	}
	return decodeResponse(resp), nil
}

// processHarness is the size and seed of a randomized harness that builds
// the command and runs it as processes (a processTest): the size from
// sizeVar (default def), the seed from seedVar (default from the clock),
// both logged, so a failing run is replayed by setting them.
func processHarness(t *testing.T, sizeVar string, def int, seedVar string) (int, uint64) {
	t.Helper()
	processTest(t)
	n := envInt(t, sizeVar, def)
	seed := envSeed(t, seedVar)
	t.Logf("%s=%d", sizeVar, n)
	return n, seed
}

// envSeed reads a harness's seed from name (default from the clock) and
// logs it.
func envSeed(t *testing.T, name string) uint64 {
	t.Helper()
	seed := uint64(envInt(t, name, int(time.Now().UnixNano()&0xffffffff)))
	t.Logf("%s=%d", name, seed)
	return seed
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// SIGKILL during a stream of multi-lock commits: clients take sets of
// locks (each set under a holder of its own, so a lock's holder names the
// set it came from) and release some of them, while the server is killed
// at random instants and restarted on the same file. After each restart
// every acknowledged grant is kept (each lock's last token at least the
// one acknowledged, an acknowledged set still held whole with its tokens,
// an acknowledged release still released) and no set is held in part:
// a holder holds every lock of its set or none, whether or not its
// client heard back. At the end the stored history of every run holds
// each set's grants all or none, adjacent, with the tokens told.
//
// FENCEVIEW_CRASH_CYCLES sets the number of kills (default 20, as the
// crash harness); FENCEVIEW_CRASH_SEED replays a run.
func TestCrashMultiLockCommits(t *testing.T) {
	cycles, seed := processHarness(t, "FENCEVIEW_CRASH_CYCLES", 20, "FENCEVIEW_CRASH_SEED")
	rng := rand.New(rand.NewPCG(seed, seed))
	load := &multiCrashLoad{sets: map[string]*sentSet{}}
	p := crashCycles(t, cycles, load.check, func(url string, kill func()) {
		load.run(url, rng.Uint64(), 1+rng.IntN(100), kill)
	})
	if load.acked == 0 || load.partialOutcomes == 0 {
		t.Fatalf("%d multi-locks acknowledged, %d sent without an answer: the kills did not land during commits", load.acked, load.partialOutcomes)
	}
	if err := load.checkHistory(t, p.URL); err != nil {
		t.Fatalf("the stored history: %v", err)
	}
	t.Logf("%d multi-locks acknowledged, %d cut off by a kill, all or nothing across %d kills", load.acked, load.partialOutcomes, cycles)
}

// checkHistory replays the stored events of every kill's run (the stream
// from ?since=0) and checks that each set's grants are all there or none,
// adjacent, in the order asked, with the tokens its client was told.
func (l *multiCrashLoad) checkHistory(t *testing.T, url string) error {
	log := recordStream(t, url, "?since=0")
	// A last grant marks the end of the history: the events before it
	// are on the stream when it is.
	if r, err := postJSON(linHC, url+"/v1/locks/acquire-all", `{"resources":["crash-ml-end"],"holder":"end"}`); err != nil || r.Status != 200 {
		return fmt.Errorf("the last grant: %v %d", err, r.Status)
	}
	events := log.until(t, func(e proof.StreamEvent) bool { return e.Type == "grant" && e.Holder == "end" })
	grants := map[string][]int{} // holder -> indexes of its grant events
	for i, e := range events {
		if e.Type == "grant" && strings.HasPrefix(e.ResourceID, "crash-ml-") && e.Holder != "end" {
			grants[e.Holder] = append(grants[e.Holder], i)
		}
	}
	for holder, at := range grants {
		set, ok := l.sets[holder]
		if !ok {
			return fmt.Errorf("grants to %s, which no client asked for", holder)
		}
		if len(at) != len(set.ids) || at[len(at)-1]-at[0] != len(at)-1 {
			return fmt.Errorf("%s's set %v: %d grants, at %v: not one adjacent run", holder, set.ids, len(at), at)
		}
		for j, i := range at {
			if events[i].ResourceID != set.ids[j] || (set.acked && events[i].Token != set.tokens[j]) {
				return fmt.Errorf("%s's grant %d is %s token %d, asked %s, told %v", holder, j, events[i].ResourceID, events[i].Token, set.ids[j], set.tokens)
			}
		}
	}
	for holder, set := range l.sets {
		if set.acked && len(grants[holder]) == 0 {
			return fmt.Errorf("%s's acknowledged set %v is not in the history", holder, set.ids)
		}
	}
	return nil
}

const multiCrashLocks = 64

func multiCrashID(i int) string { return fmt.Sprintf("crash-ml-%02d", i) }

// sentSet is a multi-lock a client sent, and what it was told.
type sentSet struct {
	ids      []string
	tokens   []int64 // acknowledged: one per lock
	acked    bool
	refused  bool // answered 409: nothing may be held
	released bool // a release-all of it was acknowledged
	// releaseSent: a release-all went out, answered or not.
	releaseSent bool
}

type multiCrashLoad struct {
	mu              sync.Mutex
	sets            map[string]*sentSet // by holder
	n               int
	acked           int
	partialOutcomes int // sent, the answer lost with the server
}

// run loads the server at url until acks multi-locks are acknowledged,
// then calls stop and waits for every client.
func (l *multiCrashLoad) run(url string, seed uint64, acks int, stop func()) {
	acked := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			client := &http.Client{Timeout: 10 * time.Second}
			var kept *sentSet
			var keptHolder string
			// release sends set's release-all; false when the server is gone.
			release := func(set *sentSet, holder string) bool {
				l.mu.Lock()
				set.releaseSent = true
				l.mu.Unlock()
				r, err := postJSON(client, url+"/v1/locks/release-all", fmt.Sprintf(`{"resources":["%s"],"holder":%q}`, strings.Join(set.ids, `","`), holder))
				if err != nil {
					return false
				}
				if r.Status == 200 {
					l.mu.Lock()
					set.released = true
					l.mu.Unlock()
				}
				return true
			}
			for {
				ids := make([]string, 2+rng.IntN(5))
				for i, n := range rng.Perm(multiCrashLocks)[:len(ids)] {
					ids[i] = multiCrashID(n)
				}
				l.mu.Lock()
				l.n++
				holder := fmt.Sprintf("set-%d", l.n)
				set := &sentSet{ids: ids}
				l.sets[holder] = set
				l.mu.Unlock()
				list := `["` + strings.Join(ids, `","`) + `"]`
				r, err := postJSON(client, url+"/v1/locks/acquire-all", fmt.Sprintf(`{"resources":%s,"holder":%q,"leaseMs":3600000}`, list, holder))
				if err != nil {
					l.mu.Lock()
					l.partialOutcomes++
					l.mu.Unlock()
					return // killed
				}
				if r.Status != 200 {
					l.mu.Lock()
					set.refused = true
					l.mu.Unlock()
					continue // some lock held
				}
				grants, _ := r.Body["grants"].([]any)
				l.mu.Lock()
				for _, g := range grants {
					set.tokens = append(set.tokens, tokenOf(response{Body: g.(map[string]any)}))
				}
				set.acked = true
				l.acked++
				l.mu.Unlock()
				select {
				case acked <- struct{}{}:
				default:
				}
				// A client keeps one set at a time, held across kills; the
				// others it releases at once.
				if rng.IntN(4) == 0 {
					set, holder, kept, keptHolder = kept, keptHolder, set, holder
					if set == nil {
						continue
					}
				}
				if !release(set, holder) {
					return
				}
			}
		}()
	}
	for range acks {
		<-acked
	}
	stop()
	wg.Wait()
}

// check returns the first promise the restarted server at url broke.
func (l *multiCrashLoad) check(url string) error {
	type lockView struct {
		holder string
		last   int64
		token  int64
	}
	locks := map[string]lockView{}
	for i := range multiCrashLocks {
		id := multiCrashID(i)
		r, err := getVia(url + "/v1/locks/" + id)
		if err != nil || r.Status != 200 {
			return fmt.Errorf("GET %s: %v %d", id, err, r.Status)
		}
		holder, _ := r.Body["holder"].(string)
		locks[id] = lockView{holder: holder, last: r.num("token")}
	}
	held := map[string][]string{} // holder -> locks it holds
	for id, v := range locks {
		if v.holder != "" {
			held[v.holder] = append(held[v.holder], id)
		}
	}
	for holder, set := range l.sets {
		has := held[holder]
		switch {
		case len(has) != 0 && len(has) != len(set.ids):
			slices.Sort(has)
			return fmt.Errorf("%s holds %v of its set %v: a partial set", holder, has, set.ids)
		case set.refused && len(has) > 0:
			return fmt.Errorf("%s holds %v after its multi-lock was refused", holder, has)
		case set.released && len(has) > 0:
			return fmt.Errorf("%s still holds %v after its release-all was acknowledged", holder, has)
		case set.acked && !set.releaseSent && len(has) == 0:
			return fmt.Errorf("%s lost its acknowledged set %v", holder, set.ids)
		}
		for i, tok := range set.tokens {
			if v := locks[set.ids[i]]; v.last < tok {
				return fmt.Errorf("%s: last token %d below the acknowledged %d", set.ids[i], v.last, tok)
			}
			if len(has) > 0 && locks[set.ids[i]].last != tok {
				return fmt.Errorf("%s of %s's set: token %d, acknowledged %d", set.ids[i], holder, locks[set.ids[i]].last, tok)
			}
		}
	}
	for holder := range held {
		if _, ok := l.sets[holder]; !ok {
			return fmt.Errorf("%s holds locks no client asked for", holder)
		}
	}
	// The sets kept across this kill are checked: free them for the next.
	for holder, has := range held {
		set := l.sets[holder]
		r, err := postJSON(linHC, url+"/v1/locks/release-all", fmt.Sprintf(`{"resources":["%s"],"holder":%q}`, strings.Join(has, `","`), holder))
		if err != nil || r.Status != 200 {
			return fmt.Errorf("release-all of %s's set: %v %d", holder, err, r.Status)
		}
		set.releaseSent, set.released = true, true
	}
	return nil
}

// A lock in its lock-delay when the server is killed is still in it after
// the restart, until the same instant: availableAt is unchanged, and an
// acquire (by anyone, the vanished holder too) is refused with it. A
// lease with a delay that ran out just before the kill, its expiry not
// yet recorded, starts its delay from the lease's end, not from the
// restart. A lock released
// before the kill is free after it. The server runs on the real clock:
// the test waits on the state, polled with a deadline, never on a sleep.
func TestCrashKeepsLockDelay(t *testing.T) {
	processTest(t)
	db := filepath.Join(t.TempDir(), "fenceview.db")
	p := servertest.StartProcess(t, servertest.ProcessOptions{DBPath: db})
	acquire := func(url, res, holder string, leaseMs int) response {
		t.Helper()
		r, err := postJSON(linHC, url+"/v1/locks/"+res+"/acquire", fmt.Sprintf(`{"holder":%q,"leaseMs":%d,"lockDelayMs":60000}`, holder, leaseMs))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	lockState := func(url, res string) response {
		t.Helper()
		r, err := getVia(url + "/v1/locks/" + res)
		if err != nil || r.Status != 200 {
			t.Fatalf("GET %s: %v %d", res, err, r.Status)
		}
		return r
	}
	// waitAvailableAt polls until the lock's delay runs and returns its end.
	waitAvailableAt := func(url, res string) string {
		t.Helper()
		deadline := time.Now().Add(hangGuard)
		for time.Now().Before(deadline) {
			if at, _ := lockState(url, res).Body["availableAt"].(string); at != "" {
				return at
			}
			time.Sleep(10 * time.Millisecond) // polling, not synchronisation: the loop ends on the state
		}
		t.Fatalf("%s never entered its lock-delay", res)
		return ""
	}
	if r := acquire(p.URL, "delayed", "vanished", 1); r.Status != 200 {
		t.Fatalf("acquire: %d %v", r.Status, r.Body)
	}
	if r := acquire(p.URL, "released", "tidy", 60000); r.Status != 200 {
		t.Fatalf("acquire: %d %v", r.Status, r.Body)
	}
	if r, _ := postJSON(linHC, p.URL+"/v1/locks/released/release", `{"holder":"tidy"}`); r.Status != 200 {
		t.Fatalf("release: %d %v", r.Status, r.Body)
	}
	before := waitAvailableAt(p.URL, "delayed")
	// The second lease runs out at once, and is killed with it, most
	// likely before the server records the expiry.
	downLease := acquire(p.URL, "down", "vanished", 1)
	if downLease.Status != 200 {
		t.Fatalf("acquire: %d %v", downLease.Status, downLease.Body)
	}
	expiresAt, err := time.Parse(time.RFC3339Nano, downLease.Body["expiresAt"].(string))
	if err != nil {
		t.Fatal(err)
	}
	p.Kill()

	p = servertest.StartProcess(t, servertest.ProcessOptions{DBPath: db})
	if after, _ := lockState(p.URL, "delayed").Body["availableAt"].(string); after != before {
		t.Fatalf("availableAt %q before the kill, %q after", before, after)
	}
	for _, who := range []string{"someone", "vanished"} {
		r := acquire(p.URL, "delayed", who, 1000)
		if r.Status != 409 || r.Body["error"] != "lock delay" || r.Body["availableAt"] != before {
			t.Fatalf("acquire by %s in the delay after the restart: %d %v", who, r.Status, r.Body)
		}
	}
	wantDown := expiresAt.Add(time.Minute).UTC().Format("2006-01-02T15:04:05.000Z")
	if got := waitAvailableAt(p.URL, "down"); got != wantDown {
		t.Fatalf("a lease that ran out before the kill: availableAt %s after the restart, want its end plus the delay %s", got, wantDown)
	}
	if r := acquire(p.URL, "released", "next", 1000); r.Status != 200 {
		t.Fatalf("a lock released before the kill: %d %v", r.Status, r.Body)
	}
}
