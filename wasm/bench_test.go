package wasm

import (
	"context"
	"crypto/ed25519"
	_ "embed"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/ledger"
)

// Benchmarks for the numbers docs/wasm-abi.md reports:
//
//	go test ./wasm -run '^$' -bench . -benchmem -cpu 1,2
//
// cpu-ns/op is the time the benchmark's thread ran per op: on a shared
// machine it stays put while ns/op (wall time) moves with the load.

const benchID = "orders/shard-0042"

func BenchmarkCheck(b *testing.B) {
	b.Run("native", func(b *testing.B) {
		g := guard.New()
		onCPU(b)
		for i := 0; b.Loop(); i++ {
			g.Check(benchID, int64(i+1))
		}
	})
	b.Run("native-handle", func(b *testing.B) {
		g := guard.New()
		h, _ := g.Handle(benchID)
		onCPU(b)
		for i := 0; b.Loop(); i++ {
			g.CheckHandle(h, int64(i+1))
		}
	})
	// The host's API, by name and by handle.
	for _, c := range []struct {
		name  string
		check func(g *Guard, h Handle, token int64) (guard.Decision, error)
	}{
		{"wazero-by-name", func(g *Guard, _ Handle, token int64) (guard.Decision, error) { return g.Check(benchID, token) }},
		{"wazero-handle", (*Guard).CheckHandle},
	} {
		b.Run(c.name, func(b *testing.B) {
			g := newGuard(b, Config{Shards: 1})
			h, err := g.Handle(benchID)
			if err != nil {
				b.Fatal(err)
			}
			onCPU(b)
			for i := 0; b.Loop(); i++ {
				if _, err := c.check(g, h, int64(i+1)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// The raw export, without the host's Decision and lock: what the
	// module itself costs per call through wazero.
	b.Run("wazero-raw-export", func(b *testing.B) {
		g := newGuard(b, Config{Shards: 1})
		h, _ := g.Handle(benchID)
		s := g.shards[0]
		onCPU(b)
		for i := 0; b.Loop(); i++ {
			s.stack[0], s.stack[1] = uint64(h.h), uint64(i+1)
			s.checkHandle.CallWithStack(context.Background(), s.stack[:])
		}
	})
	// The raw by-name export: what a host that does not cache handles
	// (the Node example) pays, id copy included.
	b.Run("wazero-raw-by-name", func(b *testing.B) {
		g := newGuard(b, Config{Shards: 1})
		s := g.shards[0]
		onCPU(b)
		for i := 0; b.Loop(); i++ {
			s.mem.WriteString(s.scratch, benchID)
			s.stack[0], s.stack[1], s.stack[2] = uint64(s.scratch), uint64(len(benchID)), uint64(i+1)
			s.check.CallWithStack(context.Background(), s.stack[:])
		}
	})
	b.Run("wazero-abi-version", func(b *testing.B) { // an export that does nothing
		g := newGuard(b, Config{Shards: 1})
		fn := g.shards[0].mod.ExportedFunction("guard_abi_version")
		var stack [1]uint64
		onCPU(b)
		for b.Loop() {
			fn.CallWithStack(context.Background(), stack[:])
		}
	})
}

// Batches of checks: ns/op is per check. The host wrapper (CheckBatch)
// and the raw export (records already in guest memory) are measured
// separately.
func BenchmarkCheckBatch(b *testing.B) {
	for _, n := range []int{16, 256} {
		b.Run(fmt.Sprintf("wazero-batch-%d", n), func(b *testing.B) {
			g := newGuard(b, Config{Shards: 1})
			checks := make([]BatchCheck, n)
			for i := range checks {
				h, err := g.Handle(fmt.Sprintf("orders/shard-%04d", i))
				if err != nil {
					b.Fatal(err)
				}
				checks[i].Handle = h
			}
			tok := int64(0)
			onCPU(b, n)
			for b.Loop() {
				tok++
				for i := range checks {
					checks[i].Token = tok
				}
				if err := g.CheckBatch(checks); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/check")
		})
		b.Run(fmt.Sprintf("wazero-raw-batch-%d", n), func(b *testing.B) {
			g := newGuard(b, Config{Shards: 1})
			s := g.shards[0]
			buf := make([]byte, n*batchRecord)
			for i := 0; i < n; i++ {
				h, _ := g.Handle(fmt.Sprintf("orders/shard-%04d", i))
				binary.LittleEndian.PutUint32(buf[i*batchRecord:], h.h)
			}
			tok := int64(0)
			onCPU(b, n)
			for b.Loop() {
				// Tokens only grow, so every check is accepted; the guest
				// overwrote the records, so they are written again (one
				// copy into guest memory: what any host does).
				tok++
				for i := 0; i < n; i++ {
					binary.LittleEndian.PutUint64(buf[i*batchRecord+8:], uint64(tok))
				}
				s.mem.Write(s.batch, buf)
				s.stack[0], s.stack[1] = uint64(s.batch), uint64(n)
				s.checkBatch.CallWithStack(context.Background(), s.stack[:])
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/check")
		})
	}
}

// Signed checks: the first verification of a (resource, token, signature)
// and a repeated (cached) one, side by side: natively (package ledger),
// guard.wasm through wazero (package wasm's host) and through Node's
// node:wasi, and guard-extism.wasm through the Extism Go SDK (on wazero).
// The first verification gets a new guard every 64 tokens (tokens only
// grow); trusting the key (which prepares its tables) is setup, left out.
//
//	go test ./wasm -run '^$' -bench CheckSigned
func BenchmarkCheckSigned(b *testing.B) {
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	pubKey := key.Public().(ed25519.PublicKey)
	const tokens = 64 // distinct signed tokens for the first-verification runs
	sigs := make([][]byte, tokens+1)
	for i := 1; i <= tokens; i++ {
		sigs[i] = ed25519.Sign(key, ledger.AppendMessage(nil, benchID, int64(i)))
	}
	b.Run("native-cached", func(b *testing.B) {
		var l ledger.Ledger
		l.Trust(pubKey)
		onCPU(b)
		for b.Loop() {
			l.CheckSigned(benchID, 1, sigs[1])
		}
	})
	b.Run("native-verify", func(b *testing.B) {
		var l ledger.Ledger
		clock := onCPU(b)
		for i := 0; b.Loop(); i++ {
			if i%tokens == 0 {
				clock.stop(b)
				l = ledger.Ledger{}
				l.Trust(pubKey)
				clock.start(b)
			}
			l.CheckSigned(benchID, int64(i%tokens+1), sigs[i%tokens+1])
		}
	})
	b.Run("wazero-cached", func(b *testing.B) {
		g := newGuard(b, Config{Shards: 1})
		g.TrustKey(pubKey)
		onCPU(b)
		for b.Loop() {
			if d, err := g.CheckSignedBytes(benchID, 1, sigs[1]); err != nil || !d.Accepted {
				b.Fatal(d, err)
			}
		}
	})
	b.Run("wazero-verify", func(b *testing.B) {
		var g *Guard
		clock := onCPU(b)
		for i := 0; b.Loop(); i++ {
			if i%tokens == 0 {
				clock.stop(b)
				g = newGuard(b, Config{Shards: 1})
				g.TrustKey(pubKey)
				clock.start(b)
			}
			if d, err := g.CheckSignedBytes(benchID, int64(i%tokens+1), sigs[i%tokens+1]); err != nil || !d.Accepted {
				b.Fatal(d, err)
			}
		}
	})
	for _, mode := range []string{"cached", "verify"} {
		b.Run("node-"+mode, func(b *testing.B) { benchNodeSigned(b, mode, pubKey, sigs[1:]) })
	}
	extismCall := func(b *testing.B, p *extism.Plugin, token int64, sig []byte) {
		in := `{"resourceId":"` + benchID + `","token":` + strconv.FormatInt(token, 10) +
			`,"signature":"` + guard.EncodeSignature(sig) + `"}`
		if _, out, err := p.Call("check_signed", []byte(in)); err != nil || string(out) != `{"accepted":true}` {
			b.Fatalf("check_signed: %s %v", out, err)
		}
	}
	trustKey := `{"publicKey":"` + guard.EncodePublicKey(pubKey) + `"}`
	b.Run("extism-cached", func(b *testing.B) {
		p := newExtismPlugin(b)
		if _, _, err := p.Call("trust_key", []byte(trustKey)); err != nil {
			b.Fatal(err)
		}
		onCPU(b)
		for b.Loop() {
			extismCall(b, p, 1, sigs[1])
		}
	})
	b.Run("extism-verify", func(b *testing.B) {
		var p *extism.Plugin
		clock := onCPU(b)
		for i := 0; b.Loop(); i++ {
			if i%tokens == 0 {
				clock.stop(b)
				p = newExtismPlugin(b)
				if _, _, err := p.Call("trust_key", []byte(trustKey)); err != nil {
					b.Fatal(err)
				}
				clock.start(b)
			}
			extismCall(b, p, int64(i%tokens+1), sigs[i%tokens+1])
		}
	})
}

//go:embed testdata/bench-signed.js
var nodeBenchSigned []byte

// benchNodeSigned runs b.N signed checks in Node (testdata/bench-signed.js)
// and reports what Node measured around the checks alone: ns/op includes
// starting Node, cpu-ns/op and wall-ns/op do not.
func benchNodeSigned(b *testing.B, mode string, pub []byte, sigs [][]byte) {
	node := lookNode(b, "the Node benchmark")
	dir := b.TempDir()
	in := map[string]any{"mode": mode, "n": b.N, "key": hex.EncodeToString(pub), "id": benchID}
	var hs []string
	for _, s := range sigs {
		hs = append(hs, hex.EncodeToString(s))
	}
	in["sigs"] = hs
	input, err := json.Marshal(in)
	if err != nil {
		b.Fatal(err)
	}
	for name, data := range map[string][]byte{"bench.js": nodeBenchSigned, "guard.wasm": Bytes(), "input.json": input} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	var got struct{ CPUNs, WallNs float64 }
	runNodeJSON(b, &got, exec.Command(node, "bench.js", "guard.wasm", "input.json"), dir)
	b.ReportMetric(got.CPUNs/float64(b.N), "cpu-ns/op")
	b.ReportMetric(got.WallNs/float64(b.N), "wall-ns/op")
}

// Checks from parallel goroutines over 64 resources (run with -cpu 2).
func BenchmarkCheckParallel(b *testing.B) {
	ids := make([]string, 64)
	for i := range ids {
		ids[i] = fmt.Sprintf("orders/shard-%04d", i)
	}
	b.Run("native", func(b *testing.B) {
		g := guard.New()
		var tok atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				g.Check(ids[i%len(ids)], tok.Add(1))
			}
		})
	})
	for _, shards := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("wazero-by-name-%d-shards", shards), func(b *testing.B) {
			g := newGuard(b, Config{Shards: shards})
			var tok atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					g.Check(ids[i%len(ids)], tok.Add(1))
				}
			})
		})
		b.Run(fmt.Sprintf("wazero-handle-%d-shards", shards), func(b *testing.B) {
			g := newGuard(b, Config{Shards: shards})
			hs := make([]Handle, len(ids))
			for i, id := range ids {
				hs[i], _ = g.Handle(id)
			}
			var tok atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					g.CheckHandle(hs[i%len(hs)], tok.Add(1))
				}
			})
		})
	}
}

// Compiling guard.wasm: cold, and from a warm in-memory compilation cache.
func BenchmarkCompile(b *testing.B) {
	ctx := context.Background()
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			rt := wazero.NewRuntime(ctx)
			if _, err := rt.CompileModule(ctx, Bytes()); err != nil {
				b.Fatal(err)
			}
			rt.Close(ctx)
		}
	})
	b.Run("from-cache", func(b *testing.B) {
		cache := wazero.NewCompilationCache()
		cfg := wazero.NewRuntimeConfig().WithCompilationCache(cache)
		warm := wazero.NewRuntimeWithConfig(ctx, cfg)
		if _, err := warm.CompileModule(ctx, Bytes()); err != nil {
			b.Fatal(err)
		}
		defer warm.Close(ctx)
		for b.Loop() {
			rt := wazero.NewRuntimeWithConfig(ctx, cfg)
			if _, err := rt.CompileModule(ctx, Bytes()); err != nil {
				b.Fatal(err)
			}
			rt.Close(ctx)
		}
	})
	b.Run("from-disk-cache", func(b *testing.B) {
		dir := b.TempDir()
		warm, _ := wazero.NewCompilationCacheWithDir(dir)
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(warm))
		if _, err := rt.CompileModule(ctx, Bytes()); err != nil {
			b.Fatal(err)
		}
		rt.Close(ctx)
		for b.Loop() {
			// A fresh cache object on the same directory: a new process.
			cache, _ := wazero.NewCompilationCacheWithDir(dir)
			rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache))
			if _, err := rt.CompileModule(ctx, Bytes()); err != nil {
				b.Fatal(err)
			}
			rt.Close(ctx)
		}
	})
}

// Starting guards and instances, with the module already compiled; and
// what an instance costs in memory.
func BenchmarkStart(b *testing.B) {
	ctx := context.Background()
	b.Run("new-guard-1-shard", func(b *testing.B) {
		newGuard(b, Config{Shards: 1}) // the process compiles once
		for b.Loop() {
			g, err := New(ctx, Config{Shards: 1})
			if err != nil {
				b.Fatal(err)
			}
			g.Close(ctx)
		}
	})
	b.Run("instance", func(b *testing.B) {
		e, err := engineFor("")
		if err != nil {
			b.Fatal(err)
		}
		var linear uint32
		for b.Loop() {
			s, err := newShard(ctx, e.rt, e.compiled)
			if err != nil {
				b.Fatal(err)
			}
			linear = s.mem.Size()
			s.mod.Close(ctx)
		}
		b.ReportMetric(float64(linear), "linear-bytes/instance")
	})
	b.Run("memory-per-instance", func(b *testing.B) {
		e, err := engineFor("")
		if err != nil {
			b.Fatal(err)
		}
		const n = 16
		var before, after runtime.MemStats
		for b.Loop() {
			runtime.GC()
			runtime.ReadMemStats(&before)
			shards := make([]*shard, n)
			for i := range shards {
				if shards[i], err = newShard(ctx, e.rt, e.compiled); err != nil {
					b.Fatal(err)
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			for _, s := range shards {
				s.mod.Close(ctx)
			}
		}
		b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/n, "heap-bytes/instance")
	})
}
