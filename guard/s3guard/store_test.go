package s3guard_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fenceview/fenceview/guard/s3guard"
	"github.com/fenceview/fenceview/internal/dbtest"
)

const bucket = "fenced"

// versity starts versitygw (internal/dbtest) for the test and returns an
// S3 client of it.
func versity(t testing.TB) *s3.Client {
	t.Helper()
	srv := dbtest.Versity(t, bucket)
	t.Logf("store: %s at %s", srv.Version, srv.Addr)
	return s3Client(srv.Addr)
}

// versityGuard is a guard of bucket on a fresh versitygw, and the store's
// client, for looking behind the guard.
func versityGuard(t testing.TB) (*s3.Client, *s3guard.Guard) {
	t.Helper()
	api := versity(t)
	return api, s3guard.New(api, bucket)
}

// s3Client is aws-sdk-go-v2's client of a store at addr, path-style, with
// the store's static credentials.
func s3Client(addr string) *s3.Client {
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://" + addr),
		UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: dbtest.S3AccessKey, SecretAccessKey: dbtest.S3SecretKey}, nil
		}),
	})
}

// object reads key's body and user metadata straight from the store,
// bypassing the guard; found is false when it is absent.
func object(t testing.TB, api s3guard.API, key string) (body string, meta map[string]string, etag string, found bool) {
	t.Helper()
	out, err := api.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: &key})
	if err != nil {
		var nk interface{ ErrorCode() string }
		if errors.As(err, &nk) && (nk.ErrorCode() == "NoSuchKey" || nk.ErrorCode() == "NotFound") {
			return "", nil, "", false
		}
		t.Fatalf("GetObject(%q): %v", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), out.Metadata, aws.ToString(out.ETag), true
}

// rawPut writes key as a writer that bypasses the guard does.
func rawPut(t testing.TB, api s3guard.API, key, body string, meta map[string]string) {
	t.Helper()
	_, err := api.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: &key, Body: strings.NewReader(body), Metadata: meta,
	})
	if err != nil {
		t.Fatalf("PutObject(%q): %v", key, err)
	}
}

// interposer is the store as the guard under test sees it: before each of
// its conditional writes (PutObject, CompleteMultipartUpload,
// DeleteObject), before runs, so a test can put another writer's write
// exactly between the guard's read and its write.
type interposer struct {
	s3guard.API
	mu     sync.Mutex
	before func(call string, n int) // n counts the guard's conditional writes from 1
	n      int
	calls  []string
}

func (p *interposer) hook(call string) {
	p.mu.Lock()
	p.n++
	n := p.n
	p.calls = append(p.calls, call)
	f := p.before
	p.mu.Unlock()
	if f != nil {
		f(call, n)
	}
}

func (p *interposer) writes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.calls...)
}

func (p *interposer) PutObject(ctx context.Context, in *s3.PutObjectInput, o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	p.hook("PutObject")
	return p.API.PutObject(ctx, in, o...)
}

func (p *interposer) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, o ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	p.hook("CompleteMultipartUpload")
	return p.API.CompleteMultipartUpload(ctx, in, o...)
}

func (p *interposer) DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, o ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	p.hook("DeleteObject")
	return p.API.DeleteObject(ctx, in, o...)
}
