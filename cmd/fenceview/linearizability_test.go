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
	if testing.Short() {
		t.Skip("builds and runs real processes")
	}
	ops, seed := sizeAndSeed(t, "FENCEVIEW_LIN_OPS", 400, "FENCEVIEW_LIN_SEED")

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
	res, viz := proof.Check(tg.model, history, 10*time.Minute)
	switch res {
	case porcupine.Illegal:
		t.Fatalf("%d operations are not linearizable as a fenced register; visualization: %s", len(history), viz)
	case porcupine.Unknown:
		t.Fatalf("porcupine gave up on %d operations", len(history))
	}
	checked := time.Since(checkStart)

	// The checker can fail on this very history: report one refused write
	// that provably came after a newer accepted one as accepted instead.
	stale := proof.ProvablyStale(history)
	if len(stale) == 0 {
		t.Fatal("the workload produced no write refused after a newer one; the pauses did not happen")
	}
	if res, viz := proof.Check(tg.model, proof.Accept(history, stale[0]), 10*time.Minute); res != porcupine.Illegal {
		t.Fatalf("porcupine accepts the history with a stale write reported accepted: %v", res)
	} else {
		os.RemoveAll(filepath.Dir(viz))
	}

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
