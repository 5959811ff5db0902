// Package servertest is the one way fenceview's own tests start a fenceview
// server: in this process (Start: internal/server, as the command runs it)
// or as its own OS process (StartProcess: the built fenceview binary, for
// signals, kills and restarts). Either listens on 127.0.0.1:0 with a new
// SQLite file unless the test says otherwise, and is stopped when the test
// ends. Users of the client have their own, public, test server:
// client/fenceviewtest.
package servertest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fenceview/fenceview/internal/clock"
	"github.com/fenceview/fenceview/internal/server"
)

// Server is a fenceview server running in this process.
type Server struct {
	*server.Server             // URL() is where it answers
	DBPath         string      // its SQLite file
	Clock          *clock.Fake // its clock when that is fake, as by default; nil for another
}

// Defaults fills in what cfg leaves zero with the tests' defaults: any
// free port of 127.0.0.1, a new SQLite file in t.TempDir(), a fake clock at
// clock.TestDate (moved only by the test) and a logger that discards.
func Defaults(t testing.TB, cfg server.Config) server.Config {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.DBPath == "" {
		cfg.DBPath = filepath.Join(t.TempDir(), "fenceview.db")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.NewFake(clock.TestDate)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cfg
}

// Start runs internal/server from cfg, with Defaults for what it leaves
// zero, and returns once it listens; a failure to start fails the test.
// It is closed when the test ends.
func Start(t testing.TB, cfg server.Config) *Server {
	t.Helper()
	s, err := TryStart(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TryStart is Start for a test that expects the server may refuse to
// start: the error is returned, not a failed test.
func TryStart(t testing.TB, cfg server.Config) (*Server, error) {
	t.Helper()
	cfg = Defaults(t, cfg)
	srv, err := server.Start(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { srv.Close() })
	fc, _ := cfg.Clock.(*clock.Fake)
	return &Server{Server: srv, DBPath: cfg.DBPath, Clock: fc}, nil
}

// NewRequest builds a request to url: body is nil (none), a string (sent
// as is) or anything else (sent as JSON); header is name, value pairs, and
// a "Host" pair sets the request's Host.
func NewRequest(t testing.TB, method, url string, body any, header ...string) *http.Request {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if strings.EqualFold(header[i], "Host") {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	return req
}

// Answer is a server's answer, read to its end.
type Answer struct {
	Status int
	Header http.Header
	Raw    []byte
	Body   map[string]any // the JSON object of a JSON answer, else nil
	// Response is the answer as received, its body already read into Raw.
	Response *http.Response
}

// Do sends req with hc (nil: http.DefaultClient) and reads the answer; a
// transport error or an answer that says it is JSON and is not fails the
// test.
func Do(t testing.TB, hc *http.Client, req *http.Request) Answer {
	t.Helper()
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", req.Method, req.URL, err)
	}
	a := Answer{Status: res.StatusCode, Header: res.Header, Raw: raw, Response: res}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &a.Body); err != nil {
			t.Fatalf("%s %s: invalid JSON %q: %v", req.Method, req.URL, raw, err)
		}
	}
	return a
}

// LogBuffer collects a server's log (slog.NewTextHandler(buf, nil)) for a
// test to read while the server writes it.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is the log so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
