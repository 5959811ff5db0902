package client_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/client/fenceviewtest"
)

// The client's cost over a hand-written request on the same keep-alive
// connection, against the real server:
//
//	go test -run '^$' -bench . -benchtime 3000x ./client/
func benchServer(b *testing.B, cfg client.Config) (*fenceviewtest.Server, *client.Client, int64) {
	srv, err := fenceviewtest.Start(context.Background(), fenceviewtest.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	cfg.URL = srv.URL
	c, _ := client.New(cfg)
	b.Cleanup(func() { c.Close() })
	tok, err := c.Mutex("bench/1", "b").TryLock(context.Background(), 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	return srv, c, tok
}

func BenchmarkStateClient(b *testing.B) {
	_, c, _ := benchServer(b, client.Config{DisableRPC: true})
	ctx := context.Background()
	for b.Loop() {
		if _, err := c.State(ctx, "bench/1"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStateRawHTTP(b *testing.B) {
	srv, _, _ := benchServer(b, client.Config{})
	hc := &http.Client{}
	for b.Loop() {
		resp, err := hc.Get(srv.URL + "/v1/locks/bench%2F1")
		if err != nil {
			b.Fatal(err)
		}
		var v map[string]any
		json.NewDecoder(resp.Body).Decode(&v)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

func BenchmarkFenceClient(b *testing.B) {
	_, c, tok := benchServer(b, client.Config{DisableRPC: true})
	ctx := context.Background()
	for b.Loop() {
		if _, err := c.Fence(ctx, "bench/1", tok); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFenceRawHTTP(b *testing.B) {
	srv, _, tok := benchServer(b, client.Config{})
	hc := &http.Client{}
	body := `{"token":` + itoa(tok) + `}`
	for b.Loop() {
		resp, err := hc.Post(srv.URL+"/v1/fence/bench%2F1", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode != 200 {
			b.Fatal(resp.Status)
		}
		var v map[string]any
		json.NewDecoder(resp.Body).Decode(&v)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// The client's cost per call over the RPC stream, many goroutines sharing
// one connection (allocs/op count the in-process server's too):
//
//	go test ./client -run '^$' -bench RPC -benchmem
func BenchmarkRPCGrantCycle(b *testing.B) { benchLockCycles(b, "cycle/", time.Minute) }

// benchLockCycles grants and releases locks named prefix<n> with lease
// (0: a renewing one) over the RPC stream, one lock per goroutine.
func benchLockCycles(b *testing.B, prefix string, lease time.Duration) {
	_, c, _ := benchServer(b, client.Config{RPC: true})
	var next atomic.Int64
	b.SetParallelism(16)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		m := c.Mutex(prefix+itoa(next.Add(1)), "b")
		for pb.Next() {
			if _, err := m.TryLock(ctx, 0, lease); err != nil {
				b.Error(err)
				return
			}
			if err := m.Unlock(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkRPCFence(b *testing.B) {
	_, c, tok := benchServer(b, client.Config{RPC: true})
	b.SetParallelism(16)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if _, err := c.Fence(ctx, "bench/1", tok); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// The watchdog's cost: a lock with a renewing lease (TryLock without a
// lease) granted and released, over the RPC stream.
func BenchmarkRPCHoldCycle(b *testing.B) { benchLockCycles(b, "hold/", 0) }

// Goroutines a held lock costs while its watchdog waits to renew it:
// b.N locks held at once, counted before they are released.
func BenchmarkRPCHeld(b *testing.B) {
	_, c, _ := benchServer(b, client.Config{RPC: true})
	ctx := context.Background()
	base := runtime.NumGoroutine()
	var held []*client.Mutex
	b.ReportAllocs()
	for b.Loop() {
		m := c.Mutex("held/"+itoa(int64(len(held))), "b")
		if _, err := m.TryLock(ctx, 0, 0); err != nil {
			b.Fatal(err)
		}
		held = append(held, m)
	}
	b.ReportMetric(float64(runtime.NumGoroutine()-base)/float64(len(held)), "goroutines/hold")
	for _, m := range held {
		m.Unlock(ctx)
	}
}
