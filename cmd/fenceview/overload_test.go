package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/fair"
)

// Issue 38: one key's storm of requests over many connections took the
// server from everyone, and nothing was ever refused. Now the storm's key
// is shed (429 overloaded, Retry-After) beyond its share and queue, while
// another key's renews, releases and acquires are all served.
func TestStormOfOneKeyLeavesOthersServed(t *testing.T) {
	s := startServer(t, realClock, func(m *Main) {
		m.AdminToken = "admin"
		m.Overload = fair.Config{Seats: 4, LeaseSeats: 1, FlowSeats: 1, FlowQueue: 2, TotalQueue: 16, MaxWait: time.Hour}
	})
	ctx := context.Background()
	_, stormKey, err := s.server.Credentials.Create(ctx, "storm", auth.Client, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, honestKey, err := s.server.Credentials.Create(ctx, "honest", auth.Client, nil)
	if err != nil {
		t.Fatal(err)
	}
	post := func(hc *http.Client, key, path string, body any) (int, http.Header, map[string]any) {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", s.URL()+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := hc.Do(req)
		if err != nil {
			return 0, nil, nil
		}
		defer res.Body.Close()
		var m map[string]any
		json.NewDecoder(res.Body).Decode(&m)
		return res.StatusCode, res.Header, m
	}
	// The storm key holds its locks, then acquires them again and fences
	// them, over 32 connections in closed loops, never backing off.
	for i := range 4 {
		if st, _, b := post(http.DefaultClient, stormKey, fmt.Sprintf("/v1/locks/storm-%d/acquire", i), map[string]any{"holder": "owner"}); st != 200 {
			t.Fatalf("storm setup: %d %v", st, b)
		}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	shed := make(chan http.Header, 1)
	for c := range 32 {
		wg.Go(func() {
			hc := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
			defer hc.CloseIdleConnections()
			for i := c; !stop.Load(); i++ {
				path, body := fmt.Sprintf("/v1/locks/storm-%d/acquire", i%4), any(map[string]any{"holder": fmt.Sprint("s", c)})
				if i%2 == 1 {
					path, body = fmt.Sprintf("/v1/fence/storm-%d", i%4), map[string]any{"token": 1}
				}
				st, h, b := post(hc, stormKey, path, body)
				if st == http.StatusTooManyRequests && b["code"] == "overloaded" && b["retryAfterMs"] != nil {
					select {
					case shed <- h:
					default:
					}
				}
			}
		})
	}
	defer func() { stop.Store(true); wg.Wait() }()

	// Meanwhile the honest key keeps its lease and takes new locks.
	honest := &http.Client{}
	if st, _, b := post(honest, honestKey, "/v1/locks/kept/acquire", map[string]any{"holder": "keeper", "leaseMs": 60000}); st != 200 {
		t.Fatalf("honest acquire: %d %v", st, b)
	}
	h := <-shed // the storm is being shed
	if h.Get("Retry-After") == "" {
		t.Fatal("a shed answer without Retry-After")
	}
	for i := range 20 {
		if st, _, b := post(honest, honestKey, "/v1/locks/kept/renew", map[string]any{"holder": "keeper", "leaseMs": 60000}); st != 200 {
			t.Fatalf("renew %d during the storm: %d %v", i, st, b)
		}
		res := fmt.Sprintf("honest-%d", i)
		if st, _, b := post(honest, honestKey, "/v1/locks/"+res+"/acquire", map[string]any{"holder": "h"}); st != 200 {
			t.Fatalf("acquire %s during the storm: %d %v", res, st, b)
		}
		if st, _, b := post(honest, honestKey, "/v1/locks/"+res+"/release", map[string]any{"holder": "h"}); st != 200 {
			t.Fatalf("release %s during the storm: %d %v", res, st, b)
		}
	}
}
