package redisguard_test

import (
	"context"
	"testing"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/redisguard"
	"github.com/fenceview/fenceview/internal/signedtest"
)

// The signed table against a real redis-server; the value of a refused
// write never lands.
func TestRedisSignedTable(t *testing.T) {
	rdb := startRedis(t)
	v := &guard.Verifier{}
	g := newGuard(t, rdb, redisguard.Config{Verifier: v})
	ctx := context.Background()
	signedtest.Run(t, v, func(r string, tok int64, sig string) (guard.Decision, error) {
		return g.WriteSigned(ctx, r, tok, sig, redisguard.Set("v", sig))
	}, signedtest.Options{})
	_, vals, err := g.Read(ctx, "orders", "v")
	if err != nil || vals["v"] != signedtest.Sign(t, signedtest.New, "orders", 9) {
		t.Fatalf("value after the table: %v, %v", vals, err)
	}
	if d, err := g.Check("orders", 100); err != nil || d.Reason != guard.ReasonBadSignature || d.Required != 9 {
		t.Fatalf("unsigned Check in signed mode = %+v, %v", d, err)
	}
}
