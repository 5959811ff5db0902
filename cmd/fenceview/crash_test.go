package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The crash harness: many clients grant, fence and release over many
// resources while the real server is SIGKILLed at random instants and
// restarted on the same file. After every restart, every token issued is
// above every token any client was given, and every high-water mark is at
// least the highest token a fence call was told was accepted.
//
// FENCEVIEW_CRASH_CYCLES sets the number of kills (default 20);
// FENCEVIEW_CRASH_SEED replays a run.
func TestCrashHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills real processes")
	}
	cycles := envInt(t, "FENCEVIEW_CRASH_CYCLES", 20)
	seed := uint64(envInt(t, "FENCEVIEW_CRASH_SEED", int(time.Now().UnixNano()&0xffffffff)))
	t.Logf("%d cycles, FENCEVIEW_CRASH_SEED=%d", cycles, seed)
	rng := rand.New(rand.NewPCG(seed, seed))

	const clients, resourceCount = 16, 32
	db := filepath.Join(t.TempDir(), "fenceview.db")
	var mu sync.Mutex
	given := map[string]int64{}    // highest token any client was given, per resource
	accepted := map[string]int64{} // highest token a fence call was told was accepted
	acknowledged := 0

	for cycle := 0; cycle <= cycles; cycle++ {
		p := startProcess(t, db)
		verifyAfterRestart(t, p.url, cycle, given, accepted)
		if cycle == cycles {
			break
		}

		killAfter := 1 + rng.IntN(300) // acknowledged operations before the kill
		acks := make(chan struct{}, clients)
		var wg sync.WaitGroup
		for c := 0; c < clients; c++ {
			wg.Add(1)
			go func(c int, seed uint64) {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed, uint64(c)))
				client := &http.Client{Timeout: 10 * time.Second}
				holder := fmt.Sprintf("client-%d", c)
				ack := func() {
					mu.Lock()
					acknowledged++
					mu.Unlock()
					select {
					case acks <- struct{}{}:
					default:
					}
				}
				for {
					res := fmt.Sprintf("res-%d", rng.IntN(resourceCount))
					g, err := postJSON(client, p.url+"/v1/locks/"+res+"/acquire", fmt.Sprintf(`{"holder":%q,"leaseMs":%d}`, holder, 50+rng.IntN(500)))
					if err != nil {
						return // killed
					}
					if g.Status != 200 {
						continue
					}
					tok := tokenOf(g)
					mu.Lock()
					given[res] = max(given[res], tok)
					mu.Unlock()
					ack()
					for w := rng.IntN(3); w >= 0; w-- {
						f, err := postJSON(client, p.url+"/v1/fence/"+res, fmt.Sprintf(`{"token":%d}`, tok))
						if err != nil {
							return
						}
						if f.Status == 200 {
							mu.Lock()
							accepted[res] = max(accepted[res], tok)
							mu.Unlock()
							ack()
						}
					}
					if _, err := postJSON(client, p.url+"/v1/locks/"+res+"/release", fmt.Sprintf(`{"holder":%q}`, holder)); err != nil {
						return
					}
				}
			}(c, rng.Uint64())
		}
		for i := 0; i < killAfter; i++ {
			<-acks
		}
		p.signal(syscall.SIGKILL)
		<-p.done
		wg.Wait()
	}
	t.Logf("%d acknowledged grants and accepted writes checked across %d kills", acknowledged, cycles)
}

func verifyAfterRestart(t *testing.T, url string, cycle int, given, accepted map[string]int64) {
	t.Helper()
	for res, want := range accepted {
		r := doRequest(t, "GET", url+"/v1/resources/"+res, nil)
		if r.num("highWaterMark") < want {
			t.Fatalf("after kill %d: %s mark %d below the acknowledged %d", cycle, res, r.num("highWaterMark"), want)
		}
	}
	for res, want := range given {
		r := doRequest(t, "GET", url+"/v1/resources/"+res, nil)
		if r.num("lastToken") < want {
			t.Fatalf("after kill %d: %s last token %d below the given %d", cycle, res, r.num("lastToken"), want)
		}
		// The next grant is above everything given.
		doRequest(t, "POST", url+"/v1/locks/"+res+"/expire", nil)
		g := doRequest(t, "POST", url+"/v1/locks/"+res+"/acquire", map[string]any{"holder": "checker", "leaseMs": 1})
		if g.Status != 200 || tokenOf(g) <= want {
			t.Fatalf("after kill %d: grant on %s = %d %s, highest given before %d", cycle, res, g.Status, g.Raw, want)
		}
		given[res] = tokenOf(g)
		doRequest(t, "POST", url+"/v1/locks/"+res+"/release", map[string]any{"holder": "checker"})
	}
}

func postJSON(client *http.Client, url, body string) (response, error) {
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return response{}, err
	}
	return decodeResponse(resp), nil
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
