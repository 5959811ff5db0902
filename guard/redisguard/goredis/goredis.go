// Package goredis adapts github.com/redis/go-redis/v9 to redisguard: any
// of its clients (Client, ClusterClient, Ring, a failover client) runs the
// guard's scripts.
//
//	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
//	g, err := redisguard.New(redisguard.Config{Scripter: goredis.New(rdb)})
//
// It lives apart from redisguard so the guard itself does not depend on
// one client library.
package goredis

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/fenceview/fenceview/guard/redisguard"
)

// New returns a redisguard.Scripter running scripts on c.
func New(c redis.Scripter) redisguard.Scripter { return scripter{c} }

type scripter struct{ c redis.Scripter }

// EvalStrings sends the script's SHA-1 first (EVALSHA) and its source only
// when the server does not know it yet (NOSCRIPT), as redis.Script does.
func (s scripter) EvalStrings(ctx context.Context, sc redisguard.Script, keys []string, args []string) ([]string, error) {
	a := make([]any, len(args))
	for i, v := range args {
		a[i] = v
	}
	r, err := s.c.EvalSha(ctx, sc.SHA1, keys, a...).StringSlice()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		r, err = s.c.Eval(ctx, sc.Source, keys, a...).StringSlice()
	}
	return r, err
}
