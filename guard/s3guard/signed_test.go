package s3guard_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/client/fenceviewtest"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/s3guard"
	"github.com/fenceview/fenceview/internal/signedtest"
)

// signedTable plays the signed-token table on a guard of api in signed
// mode: the object is named as the resource, and a refused write never
// lands.
func signedTable(t *testing.T, api s3guard.API) {
	v := &guard.Verifier{}
	g := s3guard.New(api, bucket, s3guard.WithVerifier(v))
	ctx := context.Background()
	signedtest.Run(t, v, func(r string, tok int64, sig string) (guard.Decision, error) {
		return g.PutSigned(ctx, r, []byte(sig), tok, sig)
	}, signedtest.Options{})
	body, meta, _, _ := object(t, api, "orders")
	if body != signedtest.Sign(t, signedtest.New, "orders", 9) || meta[s3guard.MarkMetadata] != "9" {
		t.Fatalf("object after the table: %q, %v", body, meta)
	}
	if d, err := g.Put(ctx, "orders", []byte("bare"), 100); err != nil || d.Reason != guard.ReasonBadSignature || d.Required != 9 {
		t.Fatalf("a bare number in signed mode = %+v, %v", d, err)
	}
}

func TestSignedTable(t *testing.T)          { signedTable(t, versity(t)) }
func TestSignedTableOnTheFake(t *testing.T) { signedTable(t, newFake()) }

// Built from a client, the guard verifies signatures with the server's
// keys by default and reports its refusals, which the server keeps in its
// rejection history (and so shows on its dashboard).
func TestBuiltFromAClientVerifiesAndReports(t *testing.T) {
	api := versity(t)
	srv := fenceviewtest.New(t)
	c := srv.Client(t)
	ctx := context.Background()
	const key = "orders/42.json"
	g, err := s3guard.NewFrom(ctx, c, api, bucket, s3guard.WithSource("orders-bucket"))
	if err != nil {
		t.Fatal(err)
	}
	if !g.Signed() {
		t.Fatal("a guard built from a client is not in signed mode")
	}

	a := c.Mutex(key, "writer-a")
	if _, err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	ta := a.Token()
	if ta.Signature == "" {
		t.Fatal("the test server's grant is not signed")
	}
	// The bare number of a real grant proves nothing.
	d, err := g.Put(ctx, key, []byte("A, unsigned"), ta.Number)
	if err != nil || d.Accepted || d.Reason != guard.ReasonBadSignature {
		t.Fatalf("a bare number = %+v, %v", d, err)
	}
	mustDecide(t, g, key, "A", ta, true, "")
	// A signature of another token, and a token of another lock.
	mustDecide(t, g, key, "forged", client.Token{Resource: key, Number: ta.Number + 5, Signature: ta.Signature}, false, guard.ReasonBadSignature)
	mustDecide(t, g, key, "other lock", client.Token{Resource: "billing", Number: ta.Number + 5, Signature: ta.Signature}, false, guard.ReasonScopeMismatch)
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	b := c.Mutex(key, "writer-b")
	if _, err := b.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer b.Unlock(ctx)
	mustDecide(t, g, key, "B", b.Token(), true, "")
	mustDecide(t, g, key, "A, late", ta, false, guard.ReasonStale)
	if body, meta, _, _ := object(t, api, key); body != "B" || meta[s3guard.MarkMetadata] != itoa(b.Token().Number) {
		t.Fatalf("object %q, %v", body, meta)
	}

	page, err := c.Rejections(ctx, client.RejectionQuery{Resource: key})
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, r := range page.Rejections {
		if r.Source != "orders-bucket" {
			t.Errorf("rejection %+v: source %q", r, r.Source)
		}
		reasons = append(reasons, r.Reason)
	}
	// Newest first; the other lock's refusal is reported under this
	// object's resource, the one it was refused for.
	want := "stale-token scope-mismatch bad-signature bad-signature"
	if got := strings.Join(reasons, " "); got != want {
		t.Fatalf("rejection history %q, want %q", got, want)
	}

	// Accepting bare numbers is an explicit choice, and refusals are still
	// reported.
	loose, err := s3guard.NewFrom(ctx, c, api, bucket, s3guard.AcceptUnsignedTokens())
	if err != nil {
		t.Fatal(err)
	}
	if loose.Signed() {
		t.Fatal("AcceptUnsignedTokens left the guard in signed mode")
	}
	if d, err := loose.Put(ctx, key, []byte("bare"), b.Token().Number); err != nil || !d.Accepted {
		t.Fatalf("a bare number with AcceptUnsignedTokens = %+v, %v", d, err)
	}
	if d, err := loose.Put(ctx, key, []byte("stale bare"), ta.Number); err != nil || d.Reason != guard.ReasonStale {
		t.Fatalf("a stale bare number = %+v, %v", d, err)
	}
	page, err = c.Rejections(ctx, client.RejectionQuery{Resource: key, Source: "s3guard"})
	if err != nil || len(page.Rejections) != 1 || page.Rejections[0].Presented != ta.Number {
		t.Fatalf("the loose guard's report: %+v, %v", page.Rejections, err)
	}
}

// A refusal the server cannot record is still a refusal: the decision is
// returned with ErrNotReported, and nothing was written.
func TestRefusalNotReportedIsStillARefusal(t *testing.T) {
	api := newFake()
	srv := fenceviewtest.New(t)
	c := srv.Client(t)
	g, err := s3guard.NewFrom(context.Background(), c, api, bucket, s3guard.AcceptUnsignedTokens())
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, g, "k", "kept", 5)
	c.Close()
	d, err := g.Put(context.Background(), "k", []byte("stale"), 4)
	if d.Accepted || d.Required != 5 || !errors.Is(err, s3guard.ErrNotReported) {
		t.Fatalf("stale write with the client closed = %+v, %v", d, err)
	}
	if body, _, _, _ := object(t, api, "k"); body != "kept" {
		t.Fatalf("body %q", body)
	}
}

func mustDecide(t *testing.T, g *s3guard.Guard, key, body string, tok client.Token, accepted bool, reason string) {
	t.Helper()
	d, err := g.PutObject(context.Background(), s3guard.Object{Key: key, Body: strings.NewReader(body)}, tok)
	if err != nil || d.Accepted != accepted || d.Reason != reason {
		t.Fatalf("PutObject(%q, token %d) = %+v, %v; want accepted %v, reason %q", body, tok.Number, d, err, accepted, reason)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// keys is a key source whose keys a test sets, counting the fetches.
type keys struct {
	mu      sync.Mutex
	pubs    []ed25519.PublicKey
	fetches int
}

func (k *keys) set(pubs ...ed25519.PublicKey) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.pubs = pubs
}

func (k *keys) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.fetches
}

func (k *keys) RefreshVerifier(_ context.Context, v *guard.Verifier) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.fetches++
	return v.SetKeys(k.pubs)
}

// A guard built from a key source follows its rotations: a token signed
// by a key it has not seen makes it fetch the keys again, at most once a
// second (forgeries cannot make it hammer the server), and every minute.
func TestNewFromFollowsRotations(t *testing.T) {
	ctx := context.Background()
	api := newFake()
	if _, err := s3guard.NewFrom(ctx, &keys{}, api, bucket); !errors.Is(err, guard.ErrNoSigningKeys) {
		t.Fatalf("NewFrom of a source without keys: %v", err)
	}
	if _, err := s3guard.NewFrom(ctx, &keys{}, api, bucket, s3guard.WithVerifier(&guard.Verifier{})); !errors.Is(err, s3guard.ErrInvalid) {
		t.Fatalf("NewFrom with a verifier of its own: %v", err)
	}
	src := &keys{}
	src.set(signedtest.Public(signedtest.Old))
	g, err := s3guard.NewFrom(ctx, src, api, bucket)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Unix(1_000_000, 0)
	s3guard.SetClock(g, func() time.Time { return clock })
	put := func(token int64, k ed25519.PrivateKey) guard.Decision {
		t.Helper()
		d, err := g.PutSigned(ctx, "orders", []byte("x"), token, signedtest.Sign(t, k, "orders", token))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := put(5, signedtest.Old); !d.Accepted || src.count() != 1 {
		t.Fatalf("a token of the key fetched at build: %+v after %d fetches", d, src.count())
	}
	src.set(signedtest.Public(signedtest.New))
	if d := put(6, signedtest.New); !d.Accepted || src.count() != 2 {
		t.Fatalf("a token of the rotated-in key: %+v after %d fetches", d, src.count())
	}
	for range 5 {
		if d := put(7, signedtest.Other); d.Reason != guard.ReasonBadSignature {
			t.Fatalf("another server's token: %+v", d)
		}
	}
	if n := src.count(); n != 2 {
		t.Fatalf("5 forgeries within a second of the last fetch made %d fetches in all, want 2", n)
	}
	clock = clock.Add(time.Second)
	put(7, signedtest.Other)
	if n := src.count(); n != 3 {
		t.Fatalf("a forgery a second later: %d fetches, want 3", n)
	}
	// A minute on, the keys are old and fetched before the check, and a
	// token of the key removed at the rotation misses and fetches once more.
	clock = clock.Add(time.Minute)
	if d := put(8, signedtest.Old); d.Reason != guard.ReasonBadSignature || src.count() != 5 {
		t.Fatalf("the removed key's token after a minute: %+v after %d fetches", d, src.count())
	}
}

// The same with a real server's read-write lock: its reader's token (the
// shared grant's signature) reads and raises the mark, and is refused for
// a write; the writer of the phase before is fenced out by the read.
func TestReadWriteLockOfARealServer(t *testing.T) {
	api := versity(t)
	srv := fenceviewtest.New(t)
	c := srv.Client(t, client.Config{DisableRPC: true}) // the JSON API's shared grants
	ctx := context.Background()
	const key = "reports/weekly.csv"
	g, err := s3guard.NewFrom(ctx, c, api, bucket)
	if err != nil {
		t.Fatal(err)
	}
	w := c.RWMutex(key, "writer")
	if _, err := w.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	writer := w.Writer().Token()
	mustDecide(t, g, key, "v1", writer, true, "")
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := c.RWMutex(key, "reader")
	if _, err := r.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.RUnlock(ctx)
	reader := r.Reader().Token()
	mustDecide(t, g, key, "by a reader", reader, false, guard.ReasonSharedToken)
	got, err := g.Get(ctx, key, reader)
	if err != nil || !got.Accepted || string(got.Body) != "v1" {
		t.Fatalf("the reader's read = %+v, %v", got, err)
	}
	mustDecide(t, g, key, "v1, late", writer, false, guard.ReasonStale)
	page, err := c.Rejections(ctx, client.RejectionQuery{Resource: key})
	if err != nil || len(page.Rejections) != 2 || page.Rejections[1].Reason != guard.ReasonSharedToken {
		t.Fatalf("rejection history: %+v, %v", page.Rejections, err)
	}
}
