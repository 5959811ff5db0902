// Command downstream runs a small inventory service fenced by
// httpguard.Middleware, and plays the paused-client story against it over
// HTTP: the service refuses the stale writer with 409 and the token it
// needed, and reports the refusal to the fenceview server.
//
// The service keeps its high-water marks in SQLite (sqlguard.Marks), so a
// restart does not forget them, and the middleware checks and records each
// token in one statement.
//
//	go run ./examples/downstream            # starts a server in-process
//	go run ./examples/downstream -server http://127.0.0.1:8080
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/examples/internal/sqlitedb"
	"github.com/fenceview/fenceview/examples/internal/story"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/httpguard"
	"github.com/fenceview/fenceview/guard/sqlguard"
	"github.com/fenceview/fenceview/internal/cmdmain"
)

func main() { cmdmain.Main("downstream", run) }

// service is the downstream inventory service.
type service struct {
	mu    sync.Mutex
	stock map[string]int
}

// handleStock sets the stock of the item named by the resource. It runs
// only after the middleware accepted the request's token.
func (s *service) handleStock(w http.ResponseWriter, r *http.Request) {
	f, _ := httpguard.FromContext(r.Context())
	var body struct {
		Stock *int `json:"stock"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&body); err != nil || body.Stock == nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":"body must be {\"stock\": n}"}`)
		return
	}
	s.mu.Lock()
	s.stock[f.Resource] = *body.Stock
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"resourceId": f.Resource, "stock": *body.Stock, "token": f.Token})
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	cmd := story.NewCommand("downstream")
	paused := cmd.PausedFlags()
	fv, closeAll, err := cmd.Connect(ctx, args)
	if err != nil {
		return err
	}
	defer closeAll()

	// The downstream service: marks in SQLite, the middleware in front.
	var dbPath string // a temporary file
	db, closeDB, err := sqlitedb.Open(ctx, &dbPath, "")
	if err != nil {
		return err
	}
	defer closeDB()
	marks, err := sqlguard.NewMarks(db, sqlguard.SQLite, "fence_marks")
	if err != nil {
		return err
	}
	if err := marks.CreateTable(ctx); err != nil {
		return err
	}
	svc := &service{stock: map[string]int{}}
	// Refusals are reported to the fenceview server, so they show in its
	// rejection history and on its dashboard like its own.
	var reported sync.WaitGroup
	var recorded atomic.Int64
	report := func(r *http.Request, res string, d guard.Decision) {
		if d.Accepted {
			return
		}
		reported.Add(1)
		go func() {
			defer reported.Done()
			rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			n, err := fv.Report(rctx, client.Report{Resource: res, Decision: d, Source: "inventory-service"})
			if err == nil {
				recorded.Add(int64(n))
			}
		}()
	}
	mux := http.NewServeMux()
	mux.Handle("PUT /stock", httpguard.Middleware(httpguard.Config{Checker: marks, OnDecision: report})(http.HandlerFunc(svc.handleStock)))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	defer hs.Close()
	serviceURL := "http://" + ln.Addr().String() + "/stock"
	fmt.Fprintln(stdout, "inventory service listening, fenced by X-Fencing-Token")

	// Callers: one http.Client whose transport attaches the token.
	hc := &http.Client{Transport: &httpguard.Transport{}}
	put := func(ctx context.Context, stock int) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, serviceURL, strings.NewReader(fmt.Sprintf(`{"stock":%d}`, stock)))
		if err != nil {
			return "", err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b))), nil
	}

	resource := paused.Resource
	a, b := fv.Mutex(resource, "client-a"), fv.Mutex(resource, "client-b")
	tokenA, err := a.TryLock(ctx, 0, paused.Lease)
	if err != nil {
		return fmt.Errorf("A: %w", err)
	}
	fmt.Fprintf(stdout, "A locked %s with token %d and pauses\n", resource, tokenA)
	tokenB, err := b.Lock(ctx)
	if err != nil {
		return fmt.Errorf("B: %w", err)
	}
	out, err := put(httpguard.WithToken(ctx, resource, tokenB), 7)
	if err != nil {
		return fmt.Errorf("B's write: %w", err)
	}
	fmt.Fprintf(stdout, "B locked with token %d and wrote: %s\n", tokenB, out)
	b.Unlock(ctx)

	out, err = put(httpguard.WithToken(ctx, resource, tokenA), 9)
	var stale *guard.RefusalError
	if !errors.As(err, &stale) {
		return fmt.Errorf("A's stale write was not refused: %q, %v", out, err)
	}
	fmt.Fprintf(stdout, "A wakes up and writes: refused, %s, token %d < required %d\n", stale.Reason, stale.Presented, stale.Required)

	// A request without a token never reaches the handler.
	out, err = put(ctx, 1)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "a write without a token: %s\n", out)

	reported.Wait()
	svc.mu.Lock()
	final := svc.stock[resource]
	svc.mu.Unlock()
	fmt.Fprintf(stdout, "stock of %s: %d\n", resource, final)
	fmt.Fprintf(stdout, "refusals reported to fenceview: %d\n", recorded.Load())
	if final != 7 || stale.Required != tokenB {
		return fmt.Errorf("unexpected end state: stock %d, required %d", final, stale.Required)
	}
	return nil
}
