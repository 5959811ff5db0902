package callguard_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/callguard"
	"github.com/fenceview/fenceview/guard/internal/marktest"
	"github.com/fenceview/fenceview/guard/sqlguard"
)

// gateway is a third-party API that checks no token but honours
// idempotency keys, like most payment APIs. failNext makes the next call
// fail after applying its effect (a lost response), to exercise retries.
type gateway struct {
	mu       sync.Mutex
	requests []string
	effects  map[string]int
	failNext bool
	srv      *httptest.Server
}

func newGateway(t *testing.T) *gateway {
	g := &gateway{effects: map[string]int{}}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get(callguard.HeaderIdempotencyKey)
		g.mu.Lock()
		defer g.mu.Unlock()
		g.requests = append(g.requests, key)
		if _, done := g.effects[key]; !done {
			g.effects[key] = len(g.effects) + 1
		}
		if g.failNext {
			g.failNext = false
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		fmt.Fprintf(w, "charge %d", g.effects[key])
	}))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *gateway) charge(ctx context.Context, key string) error {
	req, _ := http.NewRequestWithContext(ctx, "POST", g.srv.URL+"/charges", nil)
	req.Header.Set(callguard.HeaderIdempotencyKey, key)
	resp, err := g.srv.Client().Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("gateway: %s", resp.Status)
	}
	return nil
}

func recorders(t *testing.T) map[string]guard.Checker {
	return map[string]guard.Checker{"memory": guard.New(), "sqlite": marktest.SQLite(t)}
}

// B (42) has called; A (41) wakes up and tries: refused before the call,
// the gateway never hears from it.
func TestStaleHolderNeverCalls(t *testing.T) {
	for name, rec := range recorders(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			gw := newGateway(t)
			if _, err := callguard.Call(ctx, rec, "payment:order-7", 42, gw.charge); err != nil {
				t.Fatal(err)
			}
			d, err := callguard.Call(ctx, rec, "payment:order-7", 41, gw.charge)
			var stale *guard.RefusalError
			if !errors.As(err, &stale) || stale.Required != 42 || d.Accepted {
				t.Fatalf("stale call = %+v, %v", d, err)
			}
			if fmt.Sprint(gw.requests) != "[payment:order-7:42]" {
				t.Fatalf("gateway saw %v, want only B's call", gw.requests)
			}
		})
	}
}

// A failed call is retried with the same token: the record accepts it
// again, the key is the same, and the gateway applies the effect once.
func TestRetryUsesSameKey(t *testing.T) {
	ctx := context.Background()
	gw := newGateway(t)
	rec := marktest.SQLite(t)
	gw.failNext = true
	if _, err := callguard.Call(ctx, rec, "payment:order-8", 5, gw.charge); err == nil {
		t.Fatal("first call should report the gateway failure")
	}
	if _, err := callguard.Call(ctx, rec, "payment:order-8", 5, gw.charge); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(gw.requests) != "[payment:order-8:5 payment:order-8:5]" || len(gw.effects) != 1 {
		t.Fatalf("requests %v effects %v, want two requests with one key and one effect", gw.requests, gw.effects)
	}
}

type brokenRecorder struct{}

func (brokenRecorder) Check(string, int64) (guard.Decision, error) {
	return guard.Decision{}, errors.New("disk full")
}

func TestNoCallWithoutARecord(t *testing.T) {
	ctx := context.Background()
	called := 0
	call := func(context.Context, string) error { called++; return nil }
	rec := guard.New()
	for _, c := range []struct {
		res string
		tok int64
		rec guard.Checker
	}{{"", 1, rec}, {"r", 0, rec}, {"r", -3, rec}, {"r", 1, brokenRecorder{}}} {
		if _, err := callguard.Call(ctx, c.rec, c.res, c.tok, call); err == nil {
			t.Errorf("Call(%q, %d) succeeded", c.res, c.tok)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := callguard.Call(cancelled, rec, "r", 1, call); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
	if called != 0 || len(rec.Marks()) != 0 {
		t.Fatalf("called %d times, marks %v", called, rec.Marks())
	}
}

func TestKeyIsResourceColonToken(t *testing.T) {
	var got string
	_, err := callguard.Call(context.Background(), guard.New(), "mail/welcome ü", 9, func(_ context.Context, key string) error {
		got = key
		return nil
	})
	if err != nil || got != "mail/welcome ü:9" || got != guard.IdempotencyKey("mail/welcome ü", 9) {
		t.Fatalf("key %q, %v", got, err)
	}
}

var (
	_ guard.Checker        = (*guard.Guard)(nil)
	_ guard.ContextChecker = (*sqlguard.Marks)(nil)
)
