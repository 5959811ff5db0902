package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// serverBinary builds the real fenceview command once per test run.
func serverBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "fenceview-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "fenceview")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// process is a fenceview server running as its own OS process.
type process struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{}
}

var readyLine = regexp.MustCompile(`url=(http://\S+)/`)

func startProcess(t *testing.T, dbPath string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(serverBinary(t), append([]string{"--addr", "127.0.0.1:0", "--db", dbPath}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := readyLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
	}()
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.signal(syscall.SIGKILL); <-p.done })
	select {
	case p.url = <-urls:
	case <-p.done:
		t.Fatal("fenceview exited before it was ready")
	}
	return p
}

func (p *process) signal(sig syscall.Signal) {
	if p.cmd.Process != nil {
		p.cmd.Process.Signal(sig)
	}
}

// The seed's restart case, done for real: tokens keep rising across a
// SIGKILL, taken while grants and fenced writes are in flight, and every
// high-water mark a client was told about survives.
func TestTokensRiseAcrossSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills real processes")
	}
	db := filepath.Join(t.TempDir(), "fenceview.db")
	resources := []string{"res-1", "res-2", "res-3"}
	maxGiven := map[string]int64{}    // highest token any client was given
	maxAccepted := map[string]int64{} // highest token a fence call was told was accepted
	var mu sync.Mutex

	for cycle := 0; cycle < 4; cycle++ {
		p := startProcess(t, db)
		client := &http.Client{Timeout: 10 * time.Second}

		// After the restart, what was acknowledged is still there.
		for _, res := range resources {
			r := doRequest(t, "GET", p.url+"/v1/resources/"+res, nil)
			if r.Status == 200 && r.num("highWaterMark") < maxAccepted[res] {
				t.Fatalf("cycle %d: %s mark %d below the accepted %d", cycle, res, r.num("highWaterMark"), maxAccepted[res])
			}
			if r.Status == 200 && r.num("lastToken") < maxGiven[res] {
				t.Fatalf("cycle %d: %s last token %d below the given %d", cycle, res, r.num("lastToken"), maxGiven[res])
			}
			doRequest(t, "POST", p.url+"/v1/locks/"+res+"/expire", nil)
			g := doRequest(t, "POST", p.url+"/v1/locks/"+res+"/acquire", map[string]any{"holder": "checker", "leaseMs": 1})
			if g.Status != 200 || tokenOf(g) <= maxGiven[res] {
				t.Fatalf("cycle %d: first grant on %s after restart: %d %s (highest given before: %d)",
					cycle, res, g.Status, g.Raw, maxGiven[res])
			}
			maxGiven[res] = tokenOf(g)
		}

		// Load: grant, fence, force-expire, over and over, until the kill.
		var wg sync.WaitGroup
		granted := make(chan struct{}, 1000)
		for w := 0; w < 6; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				res := resources[w%len(resources)]
				for i := 0; ; i++ {
					body := fmt.Sprintf(`{"holder":"w%d","leaseMs":60000}`, w)
					resp, err := client.Post(p.url+"/v1/locks/"+res+"/acquire", "application/json", strings.NewReader(body))
					if err != nil {
						return // killed
					}
					g := decodeResponse(resp)
					if g.Status == 200 {
						mu.Lock()
						maxGiven[res] = max(maxGiven[res], tokenOf(g))
						mu.Unlock()
						select {
						case granted <- struct{}{}:
						default:
						}
						req, _ := http.NewRequest("POST", p.url+"/v1/fence/"+res, nil)
						req.Header.Set("X-Fencing-Token", itoa(tokenOf(g)))
						resp, err := client.Do(req)
						if err != nil {
							return
						}
						if f := decodeResponse(resp); f.Status == 200 {
							mu.Lock()
							maxAccepted[res] = max(maxAccepted[res], tokenOf(g))
							mu.Unlock()
						}
					}
					resp, err = client.Post(p.url+"/v1/locks/"+res+"/expire", "application/json", nil)
					if err != nil {
						return
					}
					resp.Body.Close()
				}
			}(w)
		}
		// Kill after a different amount of work each cycle.
		for i := 0; i < 20+cycle*37; i++ {
			<-granted
		}
		p.signal(syscall.SIGKILL)
		<-p.done
		wg.Wait()
	}
	p := startProcess(t, db)
	for _, res := range resources {
		doRequest(t, "POST", p.url+"/v1/locks/"+res+"/expire", nil)
		g := doRequest(t, "POST", p.url+"/v1/locks/"+res+"/acquire", map[string]any{"holder": "final"})
		if tokenOf(g) <= maxGiven[res] {
			t.Fatalf("final grant on %s: %d, highest given %d", res, tokenOf(g), maxGiven[res])
		}
	}
}

// SIGTERM stops the server cleanly: it exits 0.
func TestSIGTERMStopsCleanly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a real process")
	}
	p := startProcess(t, filepath.Join(t.TempDir(), "f.db"))
	doRequest(t, "POST", p.url+"/v1/locks/r/acquire", map[string]any{"holder": "a"})
	p.signal(syscall.SIGTERM)
	<-p.done
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM", code)
	}
}

func decodeResponse(resp *http.Response) response {
	defer resp.Body.Close()
	var r response
	r.Status = resp.StatusCode
	json.NewDecoder(resp.Body).Decode(&r.Body)
	return r
}
