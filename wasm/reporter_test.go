package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/signedtest"
)

// fakeServer implements the two routes of fenceview's HTTP API the host
// package talks to, as the contract describes them.
type fakeServer struct {
	*httptest.Server
	token string // required bearer token, if set

	mu        sync.Mutex
	batches   [][]map[string]any
	resources []map[string]any
	// gate, when set, holds every POST /v1/decisions until it is closed;
	// arrived receives one value per held request.
	gate    chan struct{}
	arrived chan struct{}
}

func newFakeServer(t testing.TB) *fakeServer {
	f := &fakeServer{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/decisions", func(w http.ResponseWriter, r *http.Request) {
		if !f.authorized(w, r) {
			return
		}
		if f.gate != nil {
			f.arrived <- struct{}{}
			<-f.gate
		}
		var body struct {
			Decisions []map[string]any `json:"decisions"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Decisions) == 0 {
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]string{"error": "bad decisions"})
			return
		}
		f.mu.Lock()
		f.batches = append(f.batches, body.Decisions)
		f.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]int{"recorded": len(body.Decisions)})
	})
	mux.HandleFunc("GET /v1/resources", func(w http.ResponseWriter, r *http.Request) {
		if !f.authorized(w, r) {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"resources": f.resources})
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) authorized(w http.ResponseWriter, r *http.Request) bool {
	if f.token != "" && r.Header.Get("Authorization") != "Bearer "+f.token {
		w.WriteHeader(http.StatusUnauthorized)
		json.NewEncoder(w).Encode(map[string]string{"error": "unauthorized"})
		return false
	}
	return true
}

func (f *fakeServer) decisions() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	var all []map[string]any
	for _, b := range f.batches {
		all = append(all, b...)
	}
	return all
}

func newReporter(t testing.TB, cfg ReporterConfig) *Reporter {
	t.Helper()
	r, err := NewReporter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	return r
}

var rfc3339Millis = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

func TestReporterShipsDecisionsInBatches(t *testing.T) {
	srv := newFakeServer(t)
	srv.token = "s3cret"
	at := time.Date(2026, 9, 24, 8, 14, 22, 5_000_000, time.FixedZone("CEST", 2*3600))
	r := newReporter(t, ReporterConfig{
		Server:    Server{URL: srv.URL, Token: "s3cret"},
		Source:    "wasm:test",
		BatchSize: 4,
		Interval:  time.Hour, // only size and Flush send
		Now:       func() time.Time { return at },
	})
	g := newGuard(t, Config{Reporter: r})
	for tok := int64(1); tok <= 9; tok++ {
		if _, err := g.Check("res", tok); err != nil {
			t.Fatal(err)
		}
	}
	if d, _ := g.Check("res", 3); d.Accepted {
		t.Fatal("stale token accepted")
	}
	g.Check("", 1) // invalid input is an error, not a decision: not reported
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := srv.decisions()
	if len(got) != 10 || r.Sent() != 10 || r.Dropped() != 0 {
		t.Fatalf("server has %d decisions, sent %d, dropped %d; want 10, 10, 0", len(got), r.Sent(), r.Dropped())
	}
	srv.mu.Lock()
	batches := srv.batches
	srv.mu.Unlock()
	for _, b := range batches {
		if len(b) > 4 {
			t.Errorf("batch of %d, limit 4", len(b))
		}
	}
	last := got[9]
	want := map[string]any{
		"resourceId": "res", "token": 3.0, "accepted": false, "required": 9.0,
		"reason": guard.ReasonStale, "source": "wasm:test", "at": "2026-09-24T06:14:22.005Z",
	}
	for k, v := range want {
		if last[k] != v {
			t.Errorf("rejection %s = %v, want %v", k, last[k], v)
		}
	}
	if first := got[0]; first["accepted"] != true || first["token"] != 1.0 || !rfc3339Millis.MatchString(first["at"].(string)) {
		t.Errorf("first decision = %v", first)
	}
}

func TestReporterOnlyRejections(t *testing.T) {
	srv := newFakeServer(t)
	r := newReporter(t, ReporterConfig{Server: Server{URL: srv.URL}, OnlyRejections: true})
	g := newGuard(t, Config{Reporter: r})
	g.Check("a", 5)
	g.Check("a", 4)
	h, _ := g.Handle("a")
	g.CheckHandle(h, 2)
	r.Flush(context.Background())
	got := srv.decisions()
	if len(got) != 2 || got[0]["accepted"] != false || got[1]["token"] != 2.0 {
		t.Fatalf("decisions = %v, want the two rejections", got)
	}
}

// A server that is down costs decisions, never checks.
func TestReporterServerDown(t *testing.T) {
	srv := newFakeServer(t)
	url := srv.URL
	srv.Close()
	r := newReporter(t, ReporterConfig{Server: Server{URL: url}})
	g := newGuard(t, Config{Reporter: r})
	for tok := int64(1); tok <= 5; tok++ {
		if d, err := g.Check("a", tok); err != nil || !d.Accepted {
			t.Fatalf("Check with the server down = %+v, %v", d, err)
		}
	}
	r.Flush(context.Background())
	if r.Dropped() != 5 || r.Sent() != 0 || r.Err() == nil {
		t.Fatalf("dropped %d sent %d err %v; want 5, 0 and an error", r.Dropped(), r.Sent(), r.Err())
	}
}

// A slow server fills the buffer; past it decisions are dropped and
// counted, and checks go on without waiting.
func TestReporterSlowServerDropsWhenFull(t *testing.T) {
	srv := newFakeServer(t)
	srv.gate, srv.arrived = make(chan struct{}), make(chan struct{}, 10)
	r := newReporter(t, ReporterConfig{Server: Server{URL: srv.URL}, BufferSize: 2, BatchSize: 1})
	g := newGuard(t, Config{Reporter: r})
	g.Check("a", 1)
	<-srv.arrived // the first decision is in flight, held by the server
	for tok := int64(2); tok <= 6; tok++ {
		if d, err := g.Check("a", tok); err != nil || !d.Accepted {
			t.Fatalf("Check while the server is stuck = %+v, %v", d, err)
		}
	}
	// Decisions 2 and 3 wait in the buffer; 4, 5 and 6 found it full.
	if r.Dropped() != 3 {
		t.Fatalf("dropped %d, want 3", r.Dropped())
	}
	close(srv.gate)
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r.Sent() != 3 {
		t.Fatalf("sent %d, want 3", r.Sent())
	}
	r.Report("a", guard.Decision{Accepted: true, Presented: 7})
	if r.Dropped() != 4 {
		t.Fatalf("a decision reported after Close was not counted as dropped")
	}
}

func TestReporterRefusedBatchIsDropped(t *testing.T) {
	srv := newFakeServer(t)
	srv.token = "right"
	r := newReporter(t, ReporterConfig{Server: Server{URL: srv.URL, Token: "wrong"}})
	r.Report("a", guard.Decision{Accepted: true, Presented: 1})
	r.Flush(context.Background())
	if r.Dropped() != 1 || r.Err() == nil {
		t.Fatalf("dropped %d err %v", r.Dropped(), r.Err())
	}
}

func TestNewReporterNeedsURL(t *testing.T) {
	if _, err := NewReporter(ReporterConfig{}); err == nil {
		t.Fatal("no error without a server URL")
	}
}

func TestSeedFromServer(t *testing.T) {
	srv := newFakeServer(t)
	srv.token = "tok"
	srv.resources = []map[string]any{
		{"resourceId": "shard-1", "highWaterMark": 40, "lastToken": 41, "holder": nil},
		{"resourceId": "shard-2", "highWaterMark": 7},
		{"resourceId": "fresh", "highWaterMark": 0},
		{"resourceId": "bad\x01id", "highWaterMark": 3},
	}
	g := newGuard(t, Config{Shards: 2})
	n, err := g.SeedFromServer(context.Background(), Server{URL: srv.URL + "/", Token: "tok"})
	if n != 2 || !errors.Is(err, guard.ErrInvalidResourceID) {
		t.Fatalf("SeedFromServer = %d, %v; want 2 and the bad id reported", n, err)
	}
	if d, _ := g.Check("shard-1", 39); d.Accepted || d.Required != 40 {
		t.Errorf("shard-1 after seeding: %+v", d)
	}
	if hwm, _ := g.HighWater("shard-2"); hwm != 7 {
		t.Errorf("shard-2 = %d", hwm)
	}
	if _, err := g.SeedFromServer(context.Background(), Server{URL: srv.URL}); err == nil {
		t.Error("no error without the admin token")
	}
	srv.Close()
	if _, err := g.SeedFromServer(context.Background(), Server{URL: srv.URL, Token: "tok"}); err == nil {
		t.Error("no error with the server down")
	}
}

// A signed guard's reads are reported as reads, its writes as writes.
func TestReporterTellsReadsFromWrites(t *testing.T) {
	srv := newFakeServer(t)
	r := newReporter(t, ReporterConfig{Server: Server{URL: srv.URL}, Source: "wasm:test"})
	g := newGuard(t, Config{Reporter: r})
	if err := g.TrustKey(signedtest.Public(signedtest.New)); err != nil {
		t.Fatal(err)
	}
	sigs, err := guard.SignGrants(signedtest.New, []string{"doc"}, []int64{5}, []bool{true})
	if err != nil {
		t.Fatal(err)
	}
	g.CheckSignedRead("doc", 5, sigs[0])
	g.CheckSigned("doc", 5, sigs[0]) // refused: a shared token may not write
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := srv.decisions()
	if len(got) != 2 || got[0]["access"] != "read" || got[0]["accepted"] != true ||
		got[1]["access"] != nil || got[1]["reason"] != guard.ReasonSharedToken {
		t.Fatalf("decisions = %v", got)
	}
}
