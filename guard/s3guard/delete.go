package s3guard

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fenceview/fenceview/guard"
)

// Delete is a fenced delete that keeps the fence: under a token at least
// the object's mark, it replaces the object with a tombstone, an empty
// object whose metadata holds the mark (fence-token) and
// fence-tombstone: true, in one conditional PUT, as Put writes. Get then
// finds nothing, and a writer with an older token is still refused:
// deleting the object outright would delete its mark with it, and the
// first stale writer would create it again (If-None-Match: * holds for an
// absent object, whatever its history).
//
// Tombstones cost a few hundred bytes of metadata each; Purge removes one
// when no older token can still be presented for its key (its lock has
// moved on, or the key is never written again, as data under unique keys).
func (g *Guard) Delete(ctx context.Context, key string, tok guard.SignedToken) (guard.Decision, error) {
	t, err := g.presentedFor(key, tok)
	if err != nil {
		return guard.Decision{}, err
	}
	b, _ := newBody(nil)
	return g.decideAndWrite(ctx, t, write{key: key, body: b, tombstone: true})
}

// Purge deletes the object, tombstone or not, under a token at least its
// mark, with the store's conditional delete (DeleteObject with If-Match
// the ETag read; 412: read and decide again). The mark goes with the
// object, so Purge fences only the writes made before it: a writer with
// an older token may create the key afresh afterwards. Use Delete where
// that matters; Purge for keys no fenced writer will write again. An
// absent object is accepted (mark 0) and nothing is sent.
//
// Stores without conditional deletes ignore If-Match and delete whatever
// is there: on them, Purge is only as safe as a plain delete.
func (g *Guard) Purge(ctx context.Context, key string, tok guard.SignedToken) (guard.Decision, error) {
	t, err := g.presentedFor(key, tok)
	if err != nil {
		return guard.Decision{}, err
	}
	res, reason, err := g.refusalFor(ctx, key, t, accessWrite)
	if err != nil {
		return guard.Decision{}, err
	}
	var lp loopState
	for {
		st, err := g.head(ctx, key)
		if err != nil {
			return guard.Decision{}, err
		}
		d := decide(st.mark, t.number, reason)
		if !d.Accepted {
			return g.reported(ctx, res, d, t.sig)
		}
		if !st.exists {
			return d, nil
		}
		etag := st.etag
		_, err = g.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &g.bucket, Key: &key, IfMatch: &etag})
		if err == nil {
			return d, nil
		}
		if err := lp.again(ctx, g.maxAttempts, st, err); err != nil {
			return guard.Decision{}, fmt.Errorf("s3guard: delete %q: %w", key, err)
		}
	}
}
