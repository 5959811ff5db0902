package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview/client"
)

// Throughput of the JSON API against the real server, durable commits and
// all. One op is one grant cycle (acquire + release) or one fenced write.
//
//	go test ./cmd/fenceview -run '^$' -bench . -benchtime 5s
func BenchmarkGrantCycle(b *testing.B) {
	benchHTTP(b, func(url string, hc *http.Client) func(id int64, i int) error {
		return func(id int64, i int) error {
			res := fmt.Sprintf("%s/v1/locks/bench-%d", url, (int(id)*7919+i)%1024)
			holder := fmt.Sprintf(`{"holder":"c%d","leaseMs":30000,"waitMs":10000}`, id)
			if err := benchPost(hc, res+"/acquire", holder, nil); err != nil {
				return err
			}
			return benchPost(hc, res+"/release", holder, nil)
		}
	})
}

func BenchmarkFence(b *testing.B) {
	benchHTTP(b, func(url string, hc *http.Client) func(id int64, i int) error {
		var token atomic.Int64
		return func(id int64, i int) error {
			// Tokens from elsewhere (never issued here): the plain rule,
			// every write accepted or refused but always recorded.
			tok := token.Add(1)
			h := http.Header{"X-Fencing-Token": {fmt.Sprint(tok)}}
			return benchPost(hc, fmt.Sprintf("%s/v1/fence/bench-%d", url, (int(id)*7919+i)%1024), "", h)
		}
	})
}

// benchHTTP runs a workload at 1 and 64 clients, each time on a new server
// at url, through the HTTP client hc; workload makes the operation of a
// run.
func benchHTTP(b *testing.B, workload func(url string, hc *http.Client) func(id int64, i int) error) {
	for _, clients := range []int{1, 64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			runClients(b, clients, workload(benchServer(b)))
		})
	}
}

func benchServer(b *testing.B) (string, *http.Client) {
	s := startServer(b, realClock)
	return s.URL(), &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
}

// runClients runs b.N operations spread over n concurrent clients and
// reports operations per second.
func runClients(b *testing.B, n int, op func(client int64, i int) error) {
	var next atomic.Int64
	b.ResetTimer()
	if n == 1 {
		for i := 0; i < b.N; i++ {
			if err := op(0, i); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		b.SetParallelism((n + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		b.RunParallel(func(pb *testing.PB) {
			id := next.Add(1)
			for i := 0; pb.Next(); i++ {
				if err := op(id, i); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

func benchPost(client *http.Client, url, body string, h http.Header) error {
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 500 || resp.StatusCode == 400 {
		return fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	return nil
}

// The same workloads through the Go client over the RPC stream: every
// client goroutine shares one connection.
//
//	go test ./cmd/fenceview -run '^$' -bench RPC -benchtime 5s
func BenchmarkGrantCycleRPC(b *testing.B) {
	benchRPC(b, func(c *client.Client) func(id int64, i int) error {
		ctx := context.Background()
		return func(id int64, i int) error {
			m := c.Mutex(fmt.Sprintf("bench-%d", (int(id)*7919+i)%1024), fmt.Sprintf("c%d", id))
			if _, err := m.TryLock(ctx, 10*time.Second, 30*time.Second); err != nil {
				return err
			}
			return m.Unlock(ctx)
		}
	})
}

func BenchmarkFenceRPC(b *testing.B) {
	benchRPC(b, func(c *client.Client) func(id int64, i int) error {
		ctx := context.Background()
		var token atomic.Int64
		return func(id int64, i int) error {
			_, err := c.Fence(ctx, fmt.Sprintf("bench-%d", (int(id)*7919+i)%1024), token.Add(1))
			var stale *client.RefusalError
			if errors.As(err, &stale) {
				return nil // refused writes are recorded too: the same work
			}
			return err
		}
	})
}

// benchRPC runs a workload at 1 and 64 clients, each time on a new server
// and one RPC connection every client goroutine shares; workload makes
// the operation of a run.
func benchRPC(b *testing.B, workload func(c *client.Client) func(id int64, i int) error) {
	for _, clients := range []int{1, 64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			url, _ := benchServer(b)
			c, err := client.New(client.Config{URL: url, RPC: true})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			runClients(b, clients, workload(c))
		})
	}
}

// Grant latency at 64 clients with and without 100 websocket clients
// watching every event: fan-out must not slow grants down.
//
//	go test ./cmd/fenceview -run '^$' -bench Watchers -benchtime 5s
func BenchmarkGrantLatencyWithWatchers(b *testing.B) {
	for _, watchers := range []int{0, 100} {
		b.Run(fmt.Sprintf("watchers=%d", watchers), func(b *testing.B) {
			url, hc := benchServer(b)
			var received atomic.Int64
			for w := 0; w < watchers; w++ {
				conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(url, "http")+"/v1/events", nil)
				if err != nil {
					b.Fatal(err)
				}
				defer conn.Close()
				go func() {
					for {
						_, r, err := conn.NextReader()
						if err != nil {
							return
						}
						io.Copy(io.Discard, r) // a watcher that reads, as cheaply as it can
						received.Add(1)
					}
				}()
			}
			var mu sync.Mutex
			var lat []time.Duration
			runClients(b, 64, func(id int64, i int) error {
				res := fmt.Sprintf("%s/v1/locks/bench-%d", url, (int(id)*7919+i)%1024)
				holder := fmt.Sprintf(`{"holder":"c%d","leaseMs":30000,"waitMs":10000}`, id)
				t := time.Now()
				if err := benchPost(hc, res+"/acquire", holder, nil); err != nil {
					return err
				}
				d := time.Since(t)
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
				return benchPost(hc, res+"/release", holder, nil)
			})
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "grant-p99-ms")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "grant-p50-ms")
			if watchers > 0 {
				b.ReportMetric(float64(received.Load())/float64(watchers), "events/watcher")
			}
		})
	}
}
