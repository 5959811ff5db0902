package redisguard_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/fenceview/fenceview/guard/redisguard"
)

// BenchmarkWrite is one fenced write (one script, one round trip) to a real
// redis-server on loopback, with one and with eight values, one writer at
// a time.
//
//	go test ./guard/redisguard -run '^$' -bench Write -benchtime 2000x
func BenchmarkWrite(b *testing.B) {
	g := newGuard(b, startRedis(b), redisguard.Config{})
	ctx := context.Background()
	for _, n := range []int{1, 8} {
		values := make([]redisguard.Value, n)
		for i := range values {
			values[i] = redisguard.Set("v"+strconv.Itoa(i), "some value")
		}
		b.Run(strconv.Itoa(n)+" values", func(b *testing.B) {
			res := "bench:" + strconv.Itoa(n)
			for i := 0; i < b.N; i++ {
				if d, err := g.Write(ctx, res, int64(i+1), values...); err != nil || !d.Accepted {
					b.Fatalf("%+v %v", d, err)
				}
			}
		})
	}
}
