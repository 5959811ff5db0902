package s3guard_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/fenceview/fenceview/guard/s3guard"
)

// fakeStore is an in-process S3 of one bucket, for the quick tests that
// run in -short mode: conditional PUT, If-Match deletes and one-part
// multipart uploads, with MD5 ETags as S3 computes them. The real store
// (versitygw) is the tests' judge; this only keeps the logic's tests fast.
type fakeStore struct {
	mu      sync.Mutex
	objects map[string]fakeObject
	uploads map[string]fakeObject
	next    int
	// refuse, when set, answers every conditional write with a 412, as a
	// store that cannot evaluate conditions might; ignore, when set, writes
	// whatever the conditions say, as a store that does not implement them.
	refuse, ignore bool
}

type fakeObject struct {
	body []byte
	etag string
	meta map[string]string
}

var _ s3guard.API = (*fakeStore)(nil)

func newFake() *fakeStore {
	return &fakeStore{objects: map[string]fakeObject{}, uploads: map[string]fakeObject{}}
}

func apiError(status int, code string) error {
	return &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
		Err:      &smithy.GenericAPIError{Code: code, Message: code},
	}
}

func quoted(b []byte) string {
	s := md5.Sum(b)
	return `"` + hex.EncodeToString(s[:]) + `"`
}

// locked takes f.mu and returns what releases it.
func (f *fakeStore) locked() func() {
	f.mu.Lock()
	return f.mu.Unlock
}

// check applies a write's preconditions to the object at key. f.mu is held.
func (f *fakeStore) check(key string, ifMatch, ifNoneMatch *string) error {
	o, ok := f.objects[key]
	switch {
	case f.ignore:
		return nil
	case f.refuse && (ifMatch != nil || ifNoneMatch != nil):
		return apiError(412, "PreconditionFailed")
	case ifNoneMatch != nil && ok:
		return apiError(412, "PreconditionFailed")
	case ifMatch != nil && !ok:
		return apiError(404, "NoSuchKey")
	case ifMatch != nil && *ifMatch != o.etag:
		return apiError(412, "PreconditionFailed")
	}
	return nil
}

func copyMeta(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// lookup returns a copy of the object at key and its length, or the 404
// with code S3 answers for an absent one.
func (f *fakeStore) lookup(key, code string) (fakeObject, *int64, error) {
	defer f.locked()()
	o, ok := f.objects[key]
	if !ok {
		return o, nil, apiError(404, code)
	}
	n := int64(len(o.body))
	return fakeObject{body: o.body, etag: o.etag, meta: copyMeta(o.meta)}, &n, nil
}

func (f *fakeStore) HeadObject(_ context.Context, in *s3.HeadObjectInput, _ ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	o, n, err := f.lookup(*in.Key, "NotFound")
	if err != nil {
		return nil, err
	}
	return &s3.HeadObjectOutput{ETag: &o.etag, Metadata: o.meta, ContentLength: n}, nil
}

func (f *fakeStore) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	o, n, err := f.lookup(*in.Key, "NoSuchKey")
	if err != nil {
		return nil, err
	}
	return &s3.GetObjectOutput{ETag: &o.etag, Metadata: o.meta, ContentLength: n, Body: io.NopCloser(bytes.NewReader(o.body))}, nil
}

func (f *fakeStore) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	body, err := io.ReadAll(in.Body)
	if err != nil {
		return nil, err
	}
	defer f.locked()()
	if err := f.check(*in.Key, in.IfMatch, in.IfNoneMatch); err != nil {
		return nil, err
	}
	o := fakeObject{body: body, etag: quoted(body), meta: copyMeta(in.Metadata)}
	f.objects[*in.Key] = o
	return &s3.PutObjectOutput{ETag: &o.etag}, nil
}

func (f *fakeStore) DeleteObject(_ context.Context, in *s3.DeleteObjectInput, _ ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	defer f.locked()()
	if in.IfMatch != nil {
		if err := f.check(*in.Key, in.IfMatch, nil); err != nil {
			return nil, err
		}
	}
	delete(f.objects, *in.Key)
	return &s3.DeleteObjectOutput{}, nil
}

func (f *fakeStore) CreateMultipartUpload(_ context.Context, in *s3.CreateMultipartUploadInput, _ ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error) {
	defer f.locked()()
	f.next++
	id := strconv.Itoa(f.next)
	f.uploads[id] = fakeObject{meta: copyMeta(in.Metadata)}
	return &s3.CreateMultipartUploadOutput{UploadId: &id}, nil
}

func (f *fakeStore) UploadPart(_ context.Context, in *s3.UploadPartInput, _ ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	body, err := io.ReadAll(in.Body)
	if err != nil {
		return nil, err
	}
	defer f.locked()()
	u, ok := f.uploads[*in.UploadId]
	if !ok || *in.PartNumber != 1 {
		return nil, apiError(404, "NoSuchUpload")
	}
	u.body = body
	f.uploads[*in.UploadId] = u
	etag := quoted(body)
	return &s3.UploadPartOutput{ETag: &etag}, nil
}

func (f *fakeStore) CompleteMultipartUpload(_ context.Context, in *s3.CompleteMultipartUploadInput, _ ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	defer f.locked()()
	u, ok := f.uploads[*in.UploadId]
	if !ok {
		return nil, apiError(404, "NoSuchUpload")
	}
	if err := f.check(*in.Key, in.IfMatch, in.IfNoneMatch); err != nil {
		return nil, err
	}
	delete(f.uploads, *in.UploadId)
	part := md5.Sum(u.body)
	sum := md5.Sum(part[:])
	u.etag = fmt.Sprintf(`"%s-1"`, hex.EncodeToString(sum[:]))
	f.objects[*in.Key] = u
	return &s3.CompleteMultipartUploadOutput{ETag: &u.etag}, nil
}

func (f *fakeStore) AbortMultipartUpload(_ context.Context, in *s3.AbortMultipartUploadInput, _ ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error) {
	defer f.locked()()
	delete(f.uploads, *in.UploadId)
	return &s3.AbortMultipartUploadOutput{}, nil
}

// openUploads counts multipart uploads neither completed nor aborted.
func (f *fakeStore) openUploads() int {
	defer f.locked()()
	return len(f.uploads)
}
