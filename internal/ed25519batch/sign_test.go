package ed25519batch

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"math/rand/v2"
	"testing"
)

// Every signature of a batch is byte for byte crypto/ed25519's, for batches
// of every size up to 70, random keys and messages of every length up to
// 300 bytes.
func TestSignEqualsCryptoEd25519(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= 70; n++ {
		var seed [ed25519.SeedSize]byte
		for i := range seed {
			seed[i] = byte(rng.Uint32())
		}
		key := ed25519.NewKeyFromSeed(seed[:])
		messages := make([][]byte, n)
		for i := range messages {
			messages[i] = make([]byte, rng.IntN(301))
			for j := range messages[i] {
				messages[i][j] = byte(rng.Uint32())
			}
		}
		sigs, err := Sign(key, messages, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(sigs) != n {
			t.Fatalf("batch of %d: %d signatures", n, len(sigs))
		}
		for i, m := range messages {
			if want := ed25519.Sign(key, m); !bytes.Equal(sigs[i], want) {
				t.Fatalf("batch of %d, message %d: signature %x, crypto/ed25519 says %x", n, i, sigs[i], want)
			}
		}
	}
}

func TestSignRefusesABadKey(t *testing.T) {
	if _, err := Sign(make([]byte, 32), [][]byte{[]byte("m")}, nil); err == nil {
		t.Fatal("a 32-byte key was taken for a private key")
	}
}

// Per signature, batched against one at a time:
//
//	go test ./internal/ed25519batch -bench . -benchmem
func BenchmarkSign(b *testing.B) {
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	for _, n := range []int{1, 8, 32} {
		messages := make([][]byte, n)
		for i := range messages {
			messages[i] = []byte(fmt.Sprintf("fenceview/v1 orders/%d %d", i, 1000+i))
		}
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			var sigs [][]byte
			for i := 0; i < b.N; i++ {
				sigs, _ = Sign(key, messages, sigs[:0])
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/signature")
		})
		b.Run(fmt.Sprintf("crypto-ed25519=%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				for _, m := range messages {
					ed25519.Sign(key, m)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/signature")
		})
	}
}
