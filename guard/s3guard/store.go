package s3guard

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/fenceview/fenceview/guard"
)

// objectState is what a fenced write reads before it decides: whether
// the object is there, its ETag, its mark and whether it is a tombstone.
type objectState struct {
	exists    bool
	etag      string // as the store gave it, quotes included
	mark      int64
	tombstone bool
	size      int64 // -1 when the store did not say
}

// head reads the object's state with one HEAD.
func (g *Guard) head(ctx context.Context, key string) (objectState, error) {
	out, err := g.api.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &g.bucket, Key: &key})
	if err != nil {
		if notFound(err) {
			return objectState{}, nil
		}
		return objectState{}, fmt.Errorf("s3guard: head %q: %w", key, err)
	}
	return stateOf(key, out.ETag, out.Metadata, out.ContentLength)
}

// stateOf reads an object's state from a HEAD's or GET's answer.
func stateOf(key string, etag *string, meta map[string]string, size *int64) (objectState, error) {
	st := objectState{exists: true, size: -1}
	if size != nil {
		st.size = *size
	}
	if etag == nil || *etag == "" {
		return objectState{}, fmt.Errorf("s3guard: %q has no ETag: the store cannot make conditional writes", key)
	}
	st.etag = *etag
	if v, ok := metaValue(meta, MarkMetadata); ok {
		m, err := guard.ParseToken(v)
		if err != nil {
			// Someone else wrote it: the guard refuses to guess.
			return objectState{}, fmt.Errorf("s3guard: the mark of %q (x-amz-meta-%s) is not a fencing token: %w", key, MarkMetadata, err)
		}
		st.mark = m
	}
	if v, _ := metaValue(meta, TombstoneMetadata); v == "true" {
		st.tombstone = true
	}
	return st, nil
}

// metaValue looks name up in user metadata as the SDK returns it (names
// lower-cased by most stores, not all).
func metaValue(meta map[string]string, name string) (string, bool) {
	if v, ok := meta[name]; ok {
		return v, true
	}
	for k, v := range meta {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

// write is a write's content: the key, the body and the user metadata
// beside the mark.
type write struct {
	key         string
	body        *body
	contentType string
	meta        map[string]string // validated; without the guard's names
	tombstone   bool
	// The rest of the object's headers, kept when a read rewrites an
	// object to raise its mark.
	cacheControl, contentDisposition, contentEncoding, contentLanguage *string
}

// metadata is the user metadata a write stores: its own and the mark.
func (w write) metadata(token int64) map[string]string {
	m := make(map[string]string, len(w.meta)+2)
	for k, v := range w.meta {
		m[k] = v
	}
	m[MarkMetadata] = formatToken(token)
	if w.tombstone {
		m[TombstoneMetadata] = "true"
	}
	return m
}

// putConditional writes w under token, conditional on the state read:
// If-Match its ETag, or If-None-Match: * when there was no object.
//
// A write must change the ETag it is conditional on, or a writer that
// read the old mark with that ETag could still write after it. A single
// PUT's ETag is, on S3 and most stores, the MD5 of its body: when that is
// the ETag read (the same bytes written again, as a read that raises the
// mark does), the write goes as a one-part multipart upload instead, whose
// ETag is an MD5 of MD5s with a "-1" suffix.
func (g *Guard) putConditional(ctx context.Context, w write, st objectState, token int64) error {
	if err := w.body.rewind(); err != nil {
		return err
	}
	// Bodies of another size cannot be the bytes there: no MD5 needed.
	if st.exists && (st.size < 0 || st.size == w.body.size) && sameETag(st.etag, w.body.md5Hex()) {
		if err := w.body.rewind(); err != nil {
			return err
		}
		return g.putMultipart(ctx, w, st, token)
	}
	if err := w.body.rewind(); err != nil {
		return err
	}
	in := &s3.PutObjectInput{
		Bucket: &g.bucket, Key: &w.key,
		Body: w.body.reader(), ContentLength: &w.body.size,
		Metadata:     w.metadata(token),
		CacheControl: w.cacheControl, ContentDisposition: w.contentDisposition,
		ContentEncoding: w.contentEncoding, ContentLanguage: w.contentLanguage,
	}
	if w.contentType != "" {
		in.ContentType = &w.contentType
	}
	condition(st, &in.IfMatch, &in.IfNoneMatch)
	_, err := g.api.PutObject(ctx, in)
	return err
}

// condition sets the write's precondition from the state it read.
func condition(st objectState, ifMatch, ifNoneMatch **string) {
	if st.exists {
		e := st.etag
		*ifMatch = &e
	} else {
		star := "*"
		*ifNoneMatch = &star
	}
}

// putMultipart writes w as a one-part multipart upload completed on
// If-Match, and aborts the upload when it does not complete.
func (g *Guard) putMultipart(ctx context.Context, w write, st objectState, token int64) (err error) {
	create := &s3.CreateMultipartUploadInput{
		Bucket: &g.bucket, Key: &w.key, Metadata: w.metadata(token),
		CacheControl: w.cacheControl, ContentDisposition: w.contentDisposition,
		ContentEncoding: w.contentEncoding, ContentLanguage: w.contentLanguage,
	}
	if w.contentType != "" {
		create.ContentType = &w.contentType
	}
	up, err := g.api.CreateMultipartUpload(ctx, create)
	if err != nil {
		return err
	}
	if up.UploadId == nil {
		return fmt.Errorf("s3guard: multipart upload of %q: the store gave no upload id", w.key)
	}
	defer func() {
		if err != nil {
			// Best effort, without the caller's context (it may have
			// ended): an upload left behind costs storage until the
			// bucket's lifecycle rule removes it, and is never visible.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
			defer cancel()
			_, _ = g.api.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &g.bucket, Key: &w.key, UploadId: up.UploadId})
		}
	}()
	one := int32(1)
	part, err := g.api.UploadPart(ctx, &s3.UploadPartInput{
		Bucket: &g.bucket, Key: &w.key, UploadId: up.UploadId, PartNumber: &one,
		Body: w.body.reader(), ContentLength: &w.body.size,
	})
	if err != nil {
		return err
	}
	complete := &s3.CompleteMultipartUploadInput{
		Bucket: &g.bucket, Key: &w.key, UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{ETag: part.ETag, PartNumber: &one}}},
	}
	condition(st, &complete.IfMatch, &complete.IfNoneMatch)
	_, err = g.api.CompleteMultipartUpload(ctx, complete)
	return err
}

// sameETag compares an ETag as the store gives it (quoted) with the hex
// of an MD5.
func sameETag(etag, md5Hex string) bool {
	return strings.EqualFold(strings.Trim(etag, `"`), md5Hex)
}

// statusOf is the HTTP status of a store's error, 0 when it has none.
func statusOf(err error) int {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func codeOf(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func notFound(err error) bool {
	var nf *types.NotFound
	var nk *types.NoSuchKey
	if errors.As(err, &nf) || errors.As(err, &nk) {
		return true
	}
	return statusOf(err) == http.StatusNotFound && codeOf(err) != "NoSuchBucket"
}

// conflict reports whether a conditional write failed because the object
// changed since it was read: 412 Precondition Failed; 409
// ConditionalRequestConflict (S3, while another conditional write to the
// key is in flight); 404 NoSuchKey (If-Match on an object deleted since).
func conflict(err error) bool {
	switch statusOf(err) {
	case http.StatusPreconditionFailed:
		return true
	case http.StatusConflict:
		c := codeOf(err)
		return c == "ConditionalRequestConflict" || c == "OperationAborted"
	case http.StatusNotFound:
		return codeOf(err) == "NoSuchKey"
	}
	return false
}

// body is a write's body: a seekable stream of known size, and its MD5
// once asked for.
type body struct {
	r    io.ReadSeeker
	size int64
	sum  string // hex MD5; "" until computed
	err  error
}

func bytesReader(b []byte) io.ReadSeeker { return bytes.NewReader(b) }

// newBody measures r (nil: empty) and leaves it at its start.
func newBody(r io.ReadSeeker) (*body, error) {
	if r == nil {
		r = bytes.NewReader(nil)
	}
	size, err := r.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, fmt.Errorf("s3guard: the body cannot be measured: %w", err)
	}
	if size > MaxPutSize {
		return nil, fmt.Errorf("%w: body of %d bytes, at most %d in one PUT", ErrInvalid, size, int64(MaxPutSize))
	}
	b := &body{r: r, size: size}
	return b, b.rewind()
}

func (b *body) rewind() error {
	if _, err := b.r.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("s3guard: the body cannot be read again: %w", err)
	}
	return nil
}

// reader is the body as the SDK takes it; a *bytes.Reader stays one, so
// the SDK can sign and resend it without copying.
func (b *body) reader() io.ReadSeeker { return b.r }

// md5Hex reads the body once through MD5 (then it must be rewound); ""
// when it cannot be read, which never matches an ETag.
func (b *body) md5Hex() string {
	if b.sum != "" || b.err != nil {
		return b.sum
	}
	if br, ok := b.r.(*bytes.Reader); ok && br.Size() == b.size {
		h := md5.New()
		if _, err := br.WriteTo(h); err != nil {
			b.err = err
			return ""
		}
		b.sum = hex.EncodeToString(h.Sum(nil))
		return b.sum
	}
	h := md5.New()
	if _, err := io.Copy(h, b.r); err != nil {
		b.err = err
		return ""
	}
	b.sum = hex.EncodeToString(h.Sum(nil))
	return b.sum
}

// userMetadata validates a write's own metadata and returns it with
// lower-case names (S3 lower-cases them).
func userMetadata(meta map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(meta))
	size := len(MarkMetadata) + 19 + len(TombstoneMetadata) + len("true")
	names := make([]string, 0, len(meta))
	for k := range meta {
		names = append(names, k)
	}
	sort.Strings(names) // the same error for the same map
	for _, k := range names {
		v := meta[k]
		name := strings.ToLower(k)
		switch {
		case name == "":
			return nil, fmt.Errorf("%w: empty metadata name", ErrInvalid)
		case name == MarkMetadata || name == TombstoneMetadata:
			return nil, fmt.Errorf("%w: metadata name %q is the guard's", ErrInvalid, name)
		case !metadataName(name):
			return nil, fmt.Errorf("%w: metadata name %q: letters, digits, '-', '_' and '.' only", ErrInvalid, truncate(name))
		case !printable(v):
			return nil, fmt.Errorf("%w: metadata %q: the value must be printable ASCII", ErrInvalid, name)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%w: metadata name %q given twice (names are not case-sensitive)", ErrInvalid, name)
		}
		size += len(name) + len(v)
		if size > MaxMetadataSize {
			return nil, fmt.Errorf("%w: user metadata of more than %d bytes with %q (%d bytes): S3 keeps at most 2 KB", ErrInvalid, MaxMetadataSize, name, len(v))
		}
		out[name] = v
	}
	return out, nil
}

func metadataName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func lower(s string) string { return strings.ToLower(s) }
