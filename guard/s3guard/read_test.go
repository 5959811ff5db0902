package s3guard_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/s3guard"
	"github.com/fenceview/fenceview/internal/signedtest"
)

// A fenced read: under the mark's own token it costs one GET and writes
// nothing; under a higher token it raises the mark, keeping the body, its
// content type and metadata; a writer of an older grant is then refused,
// and so is a reader of an older one.
func TestGetRaisesTheMark(t *testing.T) {
	api, g := versityGuard(t)
	ctx := context.Background()
	const key = "report.csv"
	d, err := g.PutObject(ctx, s3guard.Object{Key: key, Body: strings.NewReader("a,b\n1,2\n"), ContentType: "text/csv", Metadata: map[string]string{"owner": "billing"}}, client.Token{Number: 4})
	if err != nil || !d.Accepted {
		t.Fatal(d, err)
	}
	_, _, etag, _ := object(t, api, key)

	p := &interposer{API: api}
	r, err := s3guard.New(p, bucket).Get(ctx, key, client.Token{Number: 4})
	if err != nil || !r.Accepted || !r.Found || string(r.Body) != "a,b\n1,2\n" || r.ContentType != "text/csv" || r.Metadata["owner"] != "billing" {
		t.Fatalf("read under the mark's token = %+v, %v", r, err)
	}
	if _, _, now, _ := object(t, api, key); now != etag || len(p.writes()) != 0 {
		t.Fatalf("a read under the mark's token wrote %v (ETag %s, was %s)", p.writes(), now, etag)
	}

	r, err = g.Get(ctx, key, client.Token{Number: 6})
	if err != nil || !r.Accepted || r.Required != 4 || string(r.Body) != "a,b\n1,2\n" {
		t.Fatalf("read under a newer token = %+v, %v", r, err)
	}
	out, err := api.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	if out.Metadata[s3guard.MarkMetadata] != "6" || out.Metadata["owner"] != "billing" || aws.ToString(out.ContentType) != "text/csv" || aws.ToString(out.ETag) == etag {
		t.Fatalf("after the read: metadata %v, content type %q, ETag %s (was %s)", out.Metadata, aws.ToString(out.ContentType), aws.ToString(out.ETag), etag)
	}
	// The writer whose lease ran out before the reader's grant.
	if d, err := g.Put(ctx, key, []byte("late"), 5); err != nil || d.Accepted || d.Required != 6 {
		t.Fatalf("a write under token 5 after a read under 6 = %+v, %v", d, err)
	}
	// A later writer, then the reader of the older phase.
	mustPut(t, g, key, "x,y\n", 7)
	if r, err := g.Get(ctx, key, client.Token{Number: 6}); err != nil || r.Accepted || r.Reason != guard.ReasonStale || r.Body != nil || r.Found {
		t.Fatalf("a read under 6 after a write under 7 = %+v, %v", r, err)
	}
}

// Reading an absent object under a token leaves a tombstone holding the
// mark, so a writer of an older grant cannot create the object the reader
// saw absent.
func TestGetOfAnAbsentObjectKeepsTheMark(t *testing.T) {
	_, g := versityGuard(t)
	ctx := context.Background()
	r, err := g.Get(ctx, "absent.txt", client.Token{Number: 3})
	if err != nil || !r.Accepted || r.Found {
		t.Fatalf("read of an absent object = %+v, %v", r, err)
	}
	if d, err := g.Put(ctx, "absent.txt", []byte("late"), 2); err != nil || d.Accepted || d.Required != 3 {
		t.Fatalf("an older writer after the read = %+v, %v", d, err)
	}
	if r, err := g.Get(ctx, "absent.txt", client.Token{Number: 3}); err != nil || !r.Accepted || r.Found {
		t.Fatalf("read again = %+v, %v", r, err)
	}
}

// Get reads at most WithMaxReadSize bytes.
func TestGetTooLarge(t *testing.T) {
	api := newFake()
	g := s3guard.New(api, bucket, s3guard.WithMaxReadSize(4))
	mustPut(t, g, "k", "12345", 1)
	if _, err := g.Get(context.Background(), "k", client.Token{Number: 1}); !errors.Is(err, s3guard.ErrTooLarge) {
		t.Fatalf("Get of 5 bytes with a bound of 4: %v", err)
	}
}

// Delete leaves a tombstone that keeps the mark: the object reads as
// absent, an older writer cannot bring it back, a newer one can.
func TestDeleteKeepsTheFence(t *testing.T) {
	api, g := versityGuard(t)
	ctx := context.Background()
	const key = "orders/7.json"
	mustPut(t, g, key, "order 7", 5)
	if d, err := g.Delete(ctx, key, client.Token{Number: 4}); err != nil || d.Accepted || d.Required != 5 {
		t.Fatalf("a stale delete = %+v, %v", d, err)
	}
	if body, _, _, _ := object(t, api, key); body != "order 7" {
		t.Fatalf("a refused delete changed the object: %q", body)
	}
	if d, err := g.Delete(ctx, key, client.Token{Number: 6}); err != nil || !d.Accepted {
		t.Fatalf("Delete = %+v, %v", d, err)
	}
	body, meta, _, found := object(t, api, key)
	if !found || body != "" || meta[s3guard.TombstoneMetadata] != "true" || meta[s3guard.MarkMetadata] != "6" {
		t.Fatalf("tombstone: %q %v", body, meta)
	}
	if r, err := g.Get(ctx, key, client.Token{Number: 6}); err != nil || !r.Accepted || r.Found {
		t.Fatalf("Get of a tombstone = %+v, %v", r, err)
	}
	if d, err := g.Put(ctx, key, []byte("resurrected"), 5); err != nil || d.Accepted || d.Required != 6 {
		t.Fatalf("the old writer after the delete = %+v, %v", d, err)
	}
	// Deleting twice writes the same empty body: the ETag still changes.
	if d, err := g.Delete(ctx, key, client.Token{Number: 6}); err != nil || !d.Accepted {
		t.Fatalf("Delete again = %+v, %v", d, err)
	}
	mustPut(t, g, key, "order 7, again", 8)
	if r, err := g.Get(ctx, key, client.Token{Number: 8}); err != nil || !r.Found || string(r.Body) != "order 7, again" {
		t.Fatalf("Get after a newer write = %+v, %v", r, err)
	}
}

// Purge is the store's conditional delete: the object and its mark go.
func TestPurge(t *testing.T) {
	api, g := versityGuard(t)
	ctx := context.Background()
	mustPut(t, g, "tmp/1", "one", 5)
	if d, err := g.Purge(ctx, "tmp/1", client.Token{Number: 4}); err != nil || d.Accepted || d.Required != 5 {
		t.Fatalf("a stale purge = %+v, %v", d, err)
	}
	if d, err := g.Purge(ctx, "tmp/1", client.Token{Number: 5}); err != nil || !d.Accepted {
		t.Fatalf("Purge = %+v, %v", d, err)
	}
	if _, _, _, found := object(t, api, "tmp/1"); found {
		t.Fatal("purged object still there")
	}
	if d, err := g.Purge(ctx, "tmp/1", client.Token{Number: 1}); err != nil || !d.Accepted || d.Required != 0 {
		t.Fatalf("Purge of an absent object = %+v, %v", d, err)
	}
}

// A shared lock's readers present their read phase's token, signed with
// the shared grant's message: a signed guard lets it read (and raise the
// mark), never write. The writer of the phase before is then refused, and
// the writer of the phase after writes.
func TestSharedTokensReadButNeverWrite(t *testing.T) {
	api := versity(t)
	ctx := context.Background()
	v, err := guard.NewVerifier(signedtest.Public(signedtest.New))
	if err != nil {
		t.Fatal(err)
	}
	g := s3guard.New(api, bucket, s3guard.WithVerifier(v))
	const key = "reports/daily.csv"
	sigs, err := guard.SignGrants(signedtest.New, []string{key, key, key}, []int64{19, 20, 21}, []bool{false, true, false})
	if err != nil {
		t.Fatal(err)
	}
	writer19 := client.Token{Resource: key, Number: 19, Signature: sigs[0]}
	reader20 := client.Token{Resource: key, Number: 20, Signature: sigs[1]}
	writer21 := client.Token{Resource: key, Number: 21, Signature: sigs[2]}

	if d, err := g.PutObject(ctx, s3guard.Object{Key: key, Body: strings.NewReader("v1")}, writer19); err != nil || !d.Accepted {
		t.Fatalf("writer 19 = %+v, %v", d, err)
	}
	if d, err := g.PutObject(ctx, s3guard.Object{Key: key, Body: strings.NewReader("by a reader")}, reader20); err != nil || d.Reason != guard.ReasonSharedToken || d.Required != 19 {
		t.Fatalf("a shared token presented for a write = %+v, %v", d, err)
	}
	r, err := g.Get(ctx, key, reader20)
	if err != nil || !r.Accepted || string(r.Body) != "v1" {
		t.Fatalf("the reader's read = %+v, %v", r, err)
	}
	if d, err := g.PutObject(ctx, s3guard.Object{Key: key, Body: strings.NewReader("v1, late")}, writer19); err != nil || d.Reason != guard.ReasonStale || d.Required != 20 {
		t.Fatalf("writer 19 after the reader of phase 20 = %+v, %v", d, err)
	}
	if d, err := g.PutObject(ctx, s3guard.Object{Key: key, Body: strings.NewReader("v2")}, writer21); err != nil || !d.Accepted {
		t.Fatalf("writer 21 = %+v, %v", d, err)
	}
	if r, err := g.Get(ctx, key, reader20); err != nil || r.Accepted || r.Reason != guard.ReasonStale {
		t.Fatalf("the reader of phase 20 after writer 21 = %+v, %v", r, err)
	}
	if body, _, _, _ := object(t, api, key); body != "v2" {
		t.Fatalf("body %q", body)
	}
}
