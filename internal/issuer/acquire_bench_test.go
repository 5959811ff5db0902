package issuer

import (
	"fmt"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
)

// The grant path without the disk (a no-op store): acquire and release of
// one of 1,024 locks by one client, with and without stream subscribers
// reading every event, and a refused acquire of a held lock.
//
//	go test ./internal/issuer -run '^$' -bench Acquire -benchmem
func BenchmarkAcquire(b *testing.B) {
	for _, subs := range []int{0, 4} {
		b.Run(fmt.Sprintf("grant+release/subscribers=%d", subs), func(b *testing.B) {
			s := New(nopStore{}, nil, 0, Config{SweepInterval: time.Hour})
			defer s.Close()
			for range subs {
				sub := s.Subscribe("", 64)
				go func() {
					for {
						select {
						case batch := <-sub.Events():
							sub.Release(batch)
						case <-sub.Lost():
							return
						}
					}
				}()
			}
			i := 0
			for b.Loop() {
				id := benchLock(i)
				i++
				if _, err := s.Acquire(ctx, fenceview.AcquireRequest{ResourceID: id, Holder: "h", Lease: time.Minute}); err != nil {
					b.Fatal(err)
				}
				if _, err := s.Release(ctx, id, "h"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("refused", func(b *testing.B) {
		s := New(nopStore{}, nil, 0, Config{SweepInterval: time.Hour})
		defer s.Close()
		if _, err := s.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "held", Holder: "a", Lease: time.Hour}); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := s.Acquire(ctx, fenceview.AcquireRequest{ResourceID: "held", Holder: "b", Lease: time.Minute}); fenceview.ErrorCode(err) != fenceview.ECONFLICT {
				b.Fatal(err)
			}
		}
	})
}

func benchLock(i int) string { return fmt.Sprintf("lock-%d", i%1024) }
