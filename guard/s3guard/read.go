package s3guard

import (
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fenceview/fenceview/guard"
)

// Read is what a fenced read found.
type Read struct {
	// Decision: accepted when the token is at least the object's mark,
	// which is then the token.
	guard.Decision
	// Found: the object is there (not absent, not a tombstone).
	Found bool
	// Body, ContentType and Metadata (the user metadata without the
	// guard's names) are the object's, when Found and Accepted.
	Body        []byte
	ContentType string
	Metadata    map[string]string
}

// Get is a fenced read: the object's body, if token is at least its mark,
// and the mark rises to token, so no write under an older token lands
// after this read (a writer whose lease ran out cannot write once a reader
// of a later grant has read).
//
// A read under the token that is the mark costs one GET. A read under a
// higher token raises the mark by writing the object back, the same body
// under the new mark, conditional on the ETag it read (412: read again);
// an absent object gets a tombstone carrying the mark. So the first read
// of an object under each new token costs a PUT of its body: for large
// objects read by many short-lived readers, fence the reads on a small
// marker object instead (docs/fencing-your-resource.md).
//
// In signed mode a read takes a shared grant's token (a reader of a
// shared lock's read phase) as well as an exclusive one's; a write takes
// only an exclusive one's and refuses a shared one with
// guard.ReasonSharedToken.
//
// Objects larger than WithMaxReadSize are refused with ErrTooLarge.
func (g *Guard) Get(ctx context.Context, key string, tok guard.SignedToken) (Read, error) {
	t, err := g.presentedFor(key, tok)
	if err != nil {
		return Read{}, err
	}
	res, reason, err := g.refusalFor(ctx, key, t, accessRead)
	if err != nil {
		return Read{}, err
	}
	var lp loopState
	for {
		r, st, w, err := g.get(ctx, key)
		if err != nil {
			return Read{}, err
		}
		d := decide(st.mark, t.number, reason)
		if !d.Accepted {
			d, err := g.reported(ctx, res, d, t.sig)
			return Read{Decision: d}, err
		}
		r.Decision = d
		if st.exists && t.number == st.mark {
			return r, nil
		}
		// Raise the mark: the same object back under the new mark, or a
		// tombstone where there is none.
		err = g.putConditional(ctx, w, st, t.number)
		if err == nil {
			return r, nil
		}
		if err := lp.again(ctx, g.maxAttempts, st, err); err != nil {
			return Read{}, fmt.Errorf("s3guard: raise the mark of %q: %w", key, err)
		}
	}
}

// get reads the object with one GET: what the caller sees, its state, and
// the write that puts it back as it is (a tombstone when absent).
func (g *Guard) get(ctx context.Context, key string) (Read, objectState, write, error) {
	out, err := g.api.GetObject(ctx, &s3.GetObjectInput{Bucket: &g.bucket, Key: &key})
	if err != nil {
		if notFound(err) {
			w := write{key: key, tombstone: true}
			w.body, _ = newBody(nil)
			return Read{}, objectState{}, w, nil
		}
		return Read{}, objectState{}, write{}, fmt.Errorf("s3guard: get %q: %w", key, err)
	}
	defer out.Body.Close()
	if out.ContentLength != nil && *out.ContentLength > g.maxRead {
		return Read{}, objectState{}, write{}, fmt.Errorf("%w: %q is %d bytes, the guard reads at most %d", ErrTooLarge, key, *out.ContentLength, g.maxRead)
	}
	data, err := io.ReadAll(io.LimitReader(out.Body, g.maxRead+1))
	if err != nil {
		return Read{}, objectState{}, write{}, fmt.Errorf("s3guard: get %q: %w", key, err)
	}
	if int64(len(data)) > g.maxRead {
		return Read{}, objectState{}, write{}, fmt.Errorf("%w: %q is over %d bytes", ErrTooLarge, key, g.maxRead)
	}
	st, err := stateOf(key, out.ETag, out.Metadata, out.ContentLength)
	if err != nil {
		return Read{}, objectState{}, write{}, err
	}
	own := make(map[string]string, len(out.Metadata))
	for k, v := range out.Metadata {
		if n := lower(k); n != MarkMetadata && n != TombstoneMetadata {
			own[n] = v
		}
	}
	r := Read{Found: !st.tombstone}
	w := write{
		key: key, meta: own, tombstone: st.tombstone,
		cacheControl: out.CacheControl, contentDisposition: out.ContentDisposition,
		contentEncoding: out.ContentEncoding, contentLanguage: out.ContentLanguage,
	}
	if out.ContentType != nil {
		w.contentType = *out.ContentType
	}
	w.body, _ = newBody(bytesReader(data))
	if r.Found {
		r.Body, r.ContentType, r.Metadata = data, w.contentType, own
	}
	return r, st, w, nil
}

// Mark returns the object's mark: 0 when the object is absent or was
// written without the guard.
func (g *Guard) Mark(ctx context.Context, key string) (int64, error) {
	if g.err != nil {
		return 0, g.err
	}
	if err := validateKey(key); err != nil {
		return 0, err
	}
	st, err := g.head(ctx, key)
	return st.mark, err
}
