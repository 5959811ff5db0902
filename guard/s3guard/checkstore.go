package s3guard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// ErrConditionsIgnored: the store wrote what a condition should have
// refused. A guard on such a store fences nothing.
var ErrConditionsIgnored = errors.New("s3guard: the store ignores conditional writes")

// CheckStore finds out whether the store refuses what the guard needs it
// to refuse, on key, a scratch key nobody else writes: it creates the
// object with If-None-Match: *, then tries a second creation, a PutObject
// and a multipart upload with an If-Match of another ETag, and a
// DeleteObject with one; each must meet a 412 and leave the object as it
// was. Then it deletes the object. An error wrapping
// ErrConditionsIgnored names the conditions the store ignored (a store
// that ignores only DeleteObject's makes Purge a plain delete, and the
// rest of the guard sound); any other error is the store's. Run it once
// against a store before trusting the guard there.
func (g *Guard) CheckStore(ctx context.Context, key string) error {
	if g.err != nil {
		return g.err
	}
	if err := validateKey(key); err != nil {
		return err
	}
	const first = "s3guard store check: first"
	star, stale := "*", `"00000000000000000000000000000000"`
	put := func(body string, ifMatch, ifNoneMatch *string) error {
		_, err := g.api.PutObject(ctx, &s3.PutObjectInput{Bucket: &g.bucket, Key: &key, Body: strings.NewReader(body), IfMatch: ifMatch, IfNoneMatch: ifNoneMatch})
		return err
	}
	if err := put(first, nil, &star); err != nil {
		if conflict(err) {
			return fmt.Errorf("%w: %q exists: CheckStore needs a key of its own", ErrInvalid, key)
		}
		return fmt.Errorf("s3guard: create %q: %w", key, err)
	}
	defer func() {
		_, _ = g.api.DeleteObject(context.WithoutCancel(ctx), &s3.DeleteObjectInput{Bucket: &g.bucket, Key: &key})
	}()
	var ignored []string
	refused := func(what string, err error) error {
		switch {
		case err == nil:
			ignored = append(ignored, what)
		case !conflict(err):
			return fmt.Errorf("s3guard: %s on %q: %w", what, key, err)
		}
		return nil
	}
	if err := refused("PutObject If-None-Match: *", put("s3guard store check: second", nil, &star)); err != nil {
		return err
	}
	if err := refused("PutObject If-Match", put("s3guard store check: stale", &stale, nil)); err != nil {
		return err
	}
	if err := refused("CompleteMultipartUpload If-Match", g.staleMultipart(ctx, key, stale)); err != nil {
		return err
	}
	body, err := g.body(ctx, key)
	if err != nil {
		return err
	}
	if body != first && len(ignored) == 0 {
		ignored = append(ignored, "a write refused with a 412 (it landed anyway)")
	}
	_, err = g.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &g.bucket, Key: &key, IfMatch: &stale})
	if err := refused("DeleteObject If-Match", err); err != nil {
		return err
	}
	if len(ignored) > 0 {
		return fmt.Errorf("%w: %s", ErrConditionsIgnored, strings.Join(ignored, "; "))
	}
	return nil
}

// staleMultipart uploads one part to key and completes it with an
// If-Match of an ETag that is not the object's, aborting what does not
// complete.
func (g *Guard) staleMultipart(ctx context.Context, key, stale string) error {
	const part1 = "s3guard store check: multipart"
	size := int64(len(part1))
	up, err := g.api.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &g.bucket, Key: &key})
	if err != nil {
		return err
	}
	one := int32(1)
	part, err := g.api.UploadPart(ctx, &s3.UploadPartInput{Bucket: &g.bucket, Key: &key, UploadId: up.UploadId, PartNumber: &one, Body: strings.NewReader(part1), ContentLength: &size})
	if err == nil {
		_, err = g.api.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
			Bucket: &g.bucket, Key: &key, UploadId: up.UploadId, IfMatch: &stale,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{ETag: part.ETag, PartNumber: &one}}},
		})
	}
	if err != nil {
		_, _ = g.api.AbortMultipartUpload(context.WithoutCancel(ctx), &s3.AbortMultipartUploadInput{Bucket: &g.bucket, Key: &key, UploadId: up.UploadId})
	}
	return err
}

func (g *Guard) body(ctx context.Context, key string) (string, error) {
	out, err := g.api.GetObject(ctx, &s3.GetObjectInput{Bucket: &g.bucket, Key: &key})
	if err != nil {
		return "", fmt.Errorf("s3guard: read %q back: %w", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, 1<<10))
	return string(b), err
}
