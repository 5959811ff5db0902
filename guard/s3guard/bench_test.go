package s3guard_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fenceview/fenceview/guard/s3guard"
)

// BenchmarkPut compares a fenced PUT (a HEAD, then a PUT conditional on
// the ETag) with a plain PUT of the same body to the same versitygw, for
// a small and a larger body. Every write's body differs from the last (its
// first bytes count the writes), as most writes do; "same bytes" writes
// the object's bytes again, which the guard sends as a one-part multipart
// upload (three requests) so that the ETag changes.
//
//	go test ./guard/s3guard -bench . -run '^$'
func BenchmarkPut(b *testing.B) {
	api, g := versityGuard(b)
	ctx := context.Background()
	// Tokens go on rising across the runs of -count, as a holder's do.
	var token int64
	for _, size := range []int{1 << 10, 1 << 20} {
		body := bytes.Repeat([]byte{'x'}, size)
		b.Run(fmt.Sprintf("plain/%dKiB", size>>10), func(b *testing.B) {
			key := fmt.Sprintf("bench/plain-%d", size)
			b.SetBytes(int64(size))
			for i := 0; b.Loop(); i++ {
				binary.BigEndian.PutUint64(body, uint64(i))
				_, err := api.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: &key, Body: bytes.NewReader(body), Metadata: map[string]string{s3guard.MarkMetadata: fmt.Sprint(i + 1)}})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("fenced/%dKiB", size>>10), func(b *testing.B) {
			key := fmt.Sprintf("bench/fenced-%d", size)
			b.SetBytes(int64(size))
			for i := 0; b.Loop(); i++ {
				binary.BigEndian.PutUint64(body, uint64(i))
				token++
				if d, err := g.Put(ctx, key, body, token); err != nil || !d.Accepted {
					b.Fatal(d, err)
				}
			}
		})
		b.Run(fmt.Sprintf("fenced-same-bytes/%dKiB", size>>10), func(b *testing.B) {
			key := fmt.Sprintf("bench/same-%d", size)
			b.SetBytes(int64(size))
			for b.Loop() {
				token++
				if d, err := g.Put(ctx, key, body, token); err != nil || !d.Accepted {
					b.Fatal(d, err)
				}
			}
		})
	}
}
