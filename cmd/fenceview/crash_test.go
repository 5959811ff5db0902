package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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
	if testing.Short() {
		t.Skip("builds and kills real processes")
	}
	cycles, seed := sizeAndSeed(t, "FENCEVIEW_CRASH_CYCLES", 20, "FENCEVIEW_CRASH_SEED")
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
				g, err := postJSON(client, url+"/v1/locks/"+res+"/acquire", fmt.Sprintf(`{"holder":%q,"leaseMs":%d}`, holder, 50+rng.IntN(500)))
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
					f, err := postJSON(client, url+"/v1/fence/"+res, fmt.Sprintf(`{"token":%d}`, tok))
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

// sizeAndSeed reads a randomized harness's size from sizeVar (default def)
// and its seed from seedVar (default from the clock), and logs both: a
// failing run is replayed by setting them.
func sizeAndSeed(t *testing.T, sizeVar string, def int, seedVar string) (int, uint64) {
	t.Helper()
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
