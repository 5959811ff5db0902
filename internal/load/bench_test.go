package load

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/client/fenceviewtest"
)

// What the Go client costs over hand-built HTTP requests, and what its RPC
// stream gains, with 64 concurrent callers on the real server (durable
// commits and all). allocs/op and B/op count both ends, so their
// difference between the http and client rows is the client's.
//
//	go test ./cmd/fenceload/load -run '^$' -bench . -benchmem -benchtime 5s
func BenchmarkGrantCycle(b *testing.B) { benchDrivers(b, grantCycle) }

// grantCycle acquires r and releases it; r busy, it does nothing.
func grantCycle(ctx context.Context, c Client, r int) error {
	if _, err := c.Acquire(ctx, r); err != nil {
		if errors.Is(err, ErrBusy) {
			return nil
		}
		return err
	}
	return c.Release(ctx, r)
}

func BenchmarkFence(b *testing.B) {
	benchDrivers(b, func(ctx context.Context, c Client, r int) error {
		// Each resource got token 1 below; writing it again is accepted.
		ok, err := c.Fence(ctx, r, 1)
		if err == nil && !ok {
			err = errors.New("current token refused")
		}
		return err
	})
}

func benchDrivers(b *testing.B, op func(context.Context, Client, int) error) {
	const clients, resources = 64, 1024
	for _, name := range []string{"http", "client", "rpc"} {
		b.Run(name, func(b *testing.B) {
			srv, err := fenceviewtest.Start(context.Background(), fenceviewtest.Config{})
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			var d Driver
			switch name {
			case "http":
				d, err = NewHTTP(srv.URL)
			default:
				d, err = NewGoClient(srv.URL, name == "rpc")
			}
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			ctx := context.Background()
			prepare(b, d, clients, resources)
			// Token 1 for every resource, so that fenced writes are of
			// issued tokens.
			c0, _ := d.NewClient(0, "setup")
			for r := range resources {
				if _, err := c0.Acquire(ctx, r); err != nil {
					b.Fatal(err)
				}
				if err := c0.Release(ctx, r); err != nil {
					b.Fatal(err)
				}
			}
			b.SetParallelism(clients / 2) // 2 CPUs here; the rest of the 64 as far as GOMAXPROCS allows
			b.ReportAllocs()
			b.ResetTimer()
			runClients(b, d, resources, op)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}

// prepare makes the resources bench-0 to bench-(resources-1) on d for
// clients callers.
func prepare(b *testing.B, d Driver, clients, resources int) {
	names := make([]string, resources)
	for i := range names {
		names[i] = fmt.Sprintf("bench-%d", i)
	}
	if err := d.Prepare(context.Background(), Setup{Resources: names, Clients: clients, Lease: 30 * time.Second}); err != nil {
		b.Fatal(err)
	}
}

// runClients runs op from b's parallel goroutines, each with a client of
// d of its own and its own random sequence of the resources.
func runClients(b *testing.B, d Driver, resources int, op func(context.Context, Client, int) error) {
	ctx := context.Background()
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		id := int(next.Add(1))
		c, err := d.NewClient(id, fmt.Sprintf("b%d", id))
		if err != nil {
			b.Error(err)
			return
		}
		rng := rand.New(rand.NewPCG(uint64(id), 1))
		for pb.Next() {
			if err := op(ctx, c, rng.IntN(resources)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// What auth costs on the grant path: the same 64 callers over the JSON
// API, auth off and auth on (a client key on every request). The issue's
// goal is under 5% fewer grants/s.
//
//	go test ./cmd/fenceload/load -run '^$' -bench GrantCycleAuth -benchtime 5s -count 3
func BenchmarkGrantCycleAuth(b *testing.B) {
	const clients, resources = 64, 1024
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			opts := fenceviewtest.Config{}
			if on {
				opts.AdminToken = "bench-admin"
			}
			srv, err := fenceviewtest.Start(context.Background(), opts)
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			d, err := NewHTTP(srv.URL)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			ctx := context.Background()
			if on {
				admin, _ := client.New(client.Config{URL: srv.URL, AdminToken: "bench-admin"})
				k, err := admin.CreateKey(ctx, "bench", "client", []string{"bench-"})
				if err != nil {
					b.Fatal(err)
				}
				d.Key = k.Secret
			}
			prepare(b, d, clients, resources)
			b.SetParallelism(clients / 2)
			b.ResetTimer()
			runClients(b, d, resources, grantCycle)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cycles/s")
		})
	}
}
