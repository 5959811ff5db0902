// Command wasmplugin is a small key-value service whose writes are fenced by
// fenceview's WebAssembly guard, the way a plugin in any runtime would use it.
//
//	PUT /kv/{resource}   X-Fencing-Token: N, body = the value
//	GET /kv/{resource}
//
// A write whose token is below the resource's high-water mark is refused
// with 409 and X-Required-Token. The service keeps its values and marks in a
// state file (written before a write is acknowledged), restores the marks
// from it on start, and, given a fenceview server, also seeds the marks from
// the server's resources and reports every decision to it, so refused
// writes appear in the server's rejection history.
//
//	go run ./examples/wasmplugin --fenceview http://127.0.0.1:8080
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/cmdmain"
	"github.com/fenceview/fenceview/wasm"
)

func main() { cmdmain.Main("wasmplugin", run) }

// flags is the command line: where the service listens and keeps its
// state, and the fenceview server it seeds from and reports to, if any.
type flags struct {
	addr, statePath, source string
	server                  wasm.Server // no URL: no server
}

// parseFlags reads the command line. The server is called with -key when
// given (a guard key reports decisions; no admin needed), else with
// -admin-token.
func parseFlags(args []string, stdout io.Writer) (flags, error) {
	fs := flag.NewFlagSet("wasmplugin", flag.ContinueOnError)
	fs.SetOutput(stdout)
	var f flags
	fs.StringVar(&f.addr, "addr", "127.0.0.1:8090", "listen address")
	fs.StringVar(&f.statePath, "state", "wasmplugin-state.json", "file keeping values and high-water marks")
	fs.StringVar(&f.server.URL, "fenceview", "", "fenceview server URL to seed from and report to (optional)")
	fs.StringVar(&f.source, "source", "wasm:wasmplugin", "source name in the server's history")
	apiKey := fs.String("key", os.Getenv("FENCEVIEW_KEY"), "fenceview API key, when the server has auth on (env FENCEVIEW_KEY)")
	adminToken := fs.String("admin-token", os.Getenv("FENCEVIEW_ADMIN_TOKEN"), "fenceview admin token, if the server needs one")
	err := cmdmain.Parse(fs, args)
	f.server.Token = *adminToken
	if *apiKey != "" {
		f.server.Token = *apiKey
	}
	return f, err
}

// run serves until ctx is done, then saves its state, sends the decisions
// still queued, and returns. It prints "listening on <url>" once it serves.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	f, err := parseFlags(args, stdout)
	if err != nil {
		return err
	}

	svc, err := newService(f.statePath)
	if err != nil {
		return err
	}
	var cfg wasm.Config
	if f.server.URL != "" {
		if cfg.Reporter, err = wasm.NewReporter(wasm.ReporterConfig{Server: f.server, Source: f.source}); err != nil {
			return err
		}
		defer func() {
			closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cfg.Reporter.Close(closeCtx)
			if n := cfg.Reporter.Dropped(); n > 0 {
				fmt.Fprintf(stdout, "%d decisions could not be reported: %v\n", n, cfg.Reporter.Err())
			}
		}()
	}
	if svc.guard, err = wasm.New(ctx, cfg); err != nil {
		return err
	}
	defer svc.guard.Close(context.Background())

	// Restore before serving: the marks this service accepted itself, then
	// whatever the server has seen (other guards, the fence endpoint).
	if err := svc.guard.SeedMap(svc.state.Marks); err != nil {
		return fmt.Errorf("restoring marks from %s: %w", f.statePath, err)
	}
	if f.server.URL != "" {
		n, err := svc.guard.SeedFromServer(ctx, f.server)
		if err != nil {
			// Not fatal: the local marks are restored, and the server may be
			// down; the guard must keep protecting the data.
			fmt.Fprintf(stdout, "seeding from %s: %v\n", f.server.URL, err)
		} else {
			fmt.Fprintf(stdout, "seeded %d marks from %s\n", n, f.server.URL)
		}
	}

	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: svc.routes(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		return err
	}
	return nil
}

// state is what the service keeps on disk.
type state struct {
	Values map[string]string `json:"values"`
	Marks  map[string]int64  `json:"marks"`
}

type service struct {
	guard *wasm.Guard
	path  string

	// mu makes check-then-store one step: without it a write accepted with
	// token 6 could be stored before one accepted with token 5 and lose.
	mu    sync.Mutex
	state state
}

func newService(path string) (*service, error) {
	s := &service{path: path, state: state{Values: map[string]string{}, Marks: map[string]int64{}}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &s.state); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if s.state.Values == nil {
		s.state.Values = map[string]string{}
	}
	if s.state.Marks == nil {
		s.state.Marks = map[string]int64{}
	}
	return s, nil
}

// save writes the state atomically (temporary file, fsync, rename), so a
// crash leaves either the old state or the new one.
func (s *service) save() error {
	b, err := json.MarshalIndent(s.state, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".wasmplugin-state-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), s.path)
}

const maxValue = 1 << 20

func (s *service) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /kv/{resource}", s.put)
	mux.HandleFunc("GET /kv/{resource}", s.get)
	return mux
}

func (s *service) put(w http.ResponseWriter, r *http.Request) {
	resource := r.PathValue("resource")
	token, err := guard.ParseToken(r.Header.Get("X-Fencing-Token"))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "missing or invalid fencing token"})
		return
	}
	value, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxValue))
	if err != nil {
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"error": "value too large"})
		return
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	d, err := s.guard.Check(resource, token)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	if !d.Accepted {
		w.Header().Set("X-Required-Token", strconv.FormatInt(d.Required, 10))
		writeJSON(w, http.StatusConflict, map[string]any{
			"accepted": false, "reason": d.Reason, "presented": d.Presented, "required": d.Required,
		})
		return
	}
	prevValue, hadValue := s.state.Values[resource]
	prevMark := s.state.Marks[resource]
	s.state.Values[resource] = string(value)
	s.state.Marks[resource] = max(prevMark, token)
	if err := s.save(); err != nil {
		// The guard has moved its mark; the value did not land. Keep memory
		// and disk in agreement and let the client retry with its token.
		if hadValue {
			s.state.Values[resource] = prevValue
		} else {
			delete(s.state.Values, resource)
		}
		s.state.Marks[resource] = max(prevMark, token)
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": "saving state: " + err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"resourceId": resource, "token": token, "stored": true})
}

func (s *service) get(w http.ResponseWriter, r *http.Request) {
	resource := r.PathValue("resource")
	s.mu.Lock()
	v, ok := s.state.Values[resource]
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "no value for " + resource})
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	io.WriteString(w, v)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
