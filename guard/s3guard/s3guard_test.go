package s3guard_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/s3guard"
	"github.com/fenceview/fenceview/internal/guardtest"
)

// resource adapts one object of a guard to the table every guard passes.
type resource struct {
	t   testing.TB
	g   *s3guard.Guard
	api s3guard.API
	key string
}

func (r *resource) Write(ctx context.Context, token int64, value string) (guard.Decision, error) {
	return r.g.Put(ctx, r.key, []byte(value), token)
}

func (r *resource) Read(ctx context.Context) (string, int64, error) {
	body, _, _, _ := object(r.t, r.api, r.key)
	mark, err := r.g.Mark(ctx, r.key)
	return body, mark, err
}

func (r *resource) BadCalls() map[string]func(ctx context.Context) error {
	put := func(key string, meta map[string]string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			_, err := r.g.PutObject(ctx, s3guard.Object{Key: key, Body: strings.NewReader("bad"), Metadata: meta}, client.Token{Number: 10})
			return err
		}
	}
	return map[string]func(context.Context) error{
		"empty key":            put("", nil),
		"key of 1025 bytes":    put(strings.Repeat("k", 1025), nil),
		"control character":    put("a\nb", nil),
		"not UTF-8":            put("a\xffb", nil),
		"huge metadata value":  put(r.key, map[string]string{"note": strings.Repeat("x", 4096)}),
		"the mark's name":      put(r.key, map[string]string{"Fence-Token": "99"}),
		"the tombstone's name": put(r.key, map[string]string{"fence-tombstone": "true"}),
		"header injection":     put(r.key, map[string]string{"note": "a\r\nx-amz-meta-fence-token: 99"}),
		"a space in a name":    put(r.key, map[string]string{"my note": "x"}),
		"content type with CR": func(ctx context.Context) error {
			_, err := r.g.PutObject(ctx, s3guard.Object{Key: r.key, ContentType: "text/plain\r"}, client.Token{Number: 10})
			return err
		},
		"another lock's token": func(ctx context.Context) error {
			return refusedAsError(r.g.PutObject(ctx, s3guard.Object{Key: r.key}, client.Token{Resource: "other", Number: 10}))
		},
		"negative token delete": func(ctx context.Context) error {
			_, err := r.g.Delete(ctx, r.key, client.Token{Number: -1})
			return err
		},
		"zero token read": func(ctx context.Context) error { _, err := r.g.Get(ctx, r.key, client.Token{Number: 0}); return err },
	}
}

// refusedAsError turns a refusal into an error, for BadCalls.
func refusedAsError(d guard.Decision, err error) error {
	if err != nil {
		return err
	}
	return d.Err("object")
}

// The table every guard passes (higher, equal, lower, 24 concurrent
// writers, bad input), against versitygw.
func TestCases(t *testing.T) {
	runCases(t, versity(t))
}

// The same table on the in-process fake, in -short mode too.
func TestCasesOnTheFake(t *testing.T) {
	runCases(t, newFake())
}

// runCases runs the table every guard passes over a guard on api, each
// case on an object of its own.
func runCases(t *testing.T, api s3guard.API) {
	g := s3guard.New(api, bucket)
	n := 0
	guardtest.Run(t, func(t *testing.T) guardtest.Resource {
		n++
		return &resource{t: t, g: g, api: api, key: fmt.Sprintf("cases/%d.txt", n)}
	})
}

// The story: A writes, pauses past its lease, B writes under a newer
// token, A wakes and writes. A is refused and B's body and mark stay.
func TestZombieWriterRefusedBodyUntouched(t *testing.T) {
	api, g := versityGuard(t)
	ctx := context.Background()
	const key = "orders/42.json"
	mustPut(t, g, key, `{"stock":9,"by":"A"}`, 1)
	mustPut(t, g, key, `{"stock":7,"by":"B"}`, 2)
	_, _, before, _ := object(t, api, key)
	d, err := g.Put(ctx, key, []byte(`{"stock":0,"by":"A, late"}`), 1)
	guardtest.RefusedStale(t, d, err, key, 1, 2)
	body, meta, after, _ := object(t, api, key)
	if body != `{"stock":7,"by":"B"}` || meta[s3guard.MarkMetadata] != "2" || after != before {
		t.Fatalf("after the refusal: body %q, metadata %v, ETag %s (was %s)", body, meta, after, before)
	}
}

// 16 writers with distinct tokens race for one object: each gets a
// decision (no error, within the 16 attempts a fixed limit must allow),
// and the object ends with exactly the highest token's body and mark.
func TestSixteenConcurrentWritersHighestWins(t *testing.T) {
	api := versity(t)
	g := s3guard.New(api, bucket, s3guard.WithMaxAttempts(s3guard.MinAttempts))
	ctx := context.Background()
	const key = "race/object"
	tokens := make([]int64, 16)
	for i := range tokens {
		tokens[i] = int64(100 + 7*((i*5)%16)) // distinct, in a scrambled order
	}
	ds := make([]guard.Decision, len(tokens))
	errs := make([]error, len(tokens))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, tok := range tokens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ds[i], errs[i] = g.Put(ctx, key, []byte("body of "+strconv.FormatInt(tok, 10)), tok)
		}()
	}
	close(start)
	wg.Wait()
	highest := int64(100 + 7*15)
	for i, tok := range tokens {
		switch {
		case errs[i] != nil:
			t.Errorf("writer %d: %v (every writer must get a decision)", tok, errs[i])
		case tok == highest && !ds[i].Accepted:
			t.Errorf("the highest token %d was refused: %+v", tok, ds[i])
		case !ds[i].Accepted && (ds[i].Reason != guard.ReasonStale || ds[i].Required <= tok):
			t.Errorf("writer %d refused with %+v", tok, ds[i])
		}
	}
	body, meta, _, _ := object(t, api, key)
	if want := "body of " + strconv.FormatInt(highest, 10); body != want || meta[s3guard.MarkMetadata] != strconv.FormatInt(highest, 10) {
		t.Fatalf("object after the race: %q, mark %q; want %q, %d", body, meta[s3guard.MarkMetadata], want, highest)
	}
}

// A writer that bypasses the guard but raises the mark is respected: the
// mark is the object's metadata, whoever wrote it.
func TestBypassingWriterThatRaisesTheMarkIsRespected(t *testing.T) {
	api, g := versityGuard(t)
	ctx := context.Background()
	const key = "bypass.txt"
	mustPut(t, g, key, "guarded", 10)
	rawPut(t, api, key, "written around the guard", map[string]string{"fence-token": "50"})
	d, err := g.Put(ctx, key, []byte("stale"), 40)
	if err != nil || d.Accepted || d.Required != 50 {
		t.Fatalf("token 40 after a raw write with mark 50 = %+v, %v", d, err)
	}
	if body, _, _, _ := object(t, api, key); body != "written around the guard" {
		t.Fatalf("body %q", body)
	}
	mustPut(t, g, key, "equal token", 50)
	// An object written without any mark has mark 0: any token is taken.
	rawPut(t, api, "unmarked.txt", "plain", nil)
	if d := mustPut(t, g, "unmarked.txt", "now fenced", 1); d.Required != 0 {
		t.Fatalf("first fenced write over an unmarked object = %+v", d)
	}
	// A mark that is not a token is someone else's: the guard refuses to
	// guess, and writes nothing.
	rawPut(t, api, "foreign.txt", "theirs", map[string]string{"fence-token": "1e3"})
	if _, err := g.Put(ctx, "foreign.txt", []byte("ours"), 5000); err == nil || !strings.Contains(err.Error(), "not a fencing token") {
		t.Fatalf("Put over a foreign mark = %v", err)
	}
	if body, _, _, _ := object(t, api, "foreign.txt"); body != "theirs" {
		t.Fatalf("foreign object overwritten: %q", body)
	}
}

// Marks are per object: a high token on one object does not refuse a low
// one on another, whatever their names share.
func TestMarksArePerObject(t *testing.T) {
	_, g := versityGuard(t)
	mustPut(t, g, "a.txt", "a", 900)
	mustPut(t, g, "b.txt", "b", 3)
	mustPut(t, g, "a.txt.v2", "c", 1)
	for key, want := range map[string]int64{"a.txt": 900, "b.txt": 3, "a.txt.v2": 1, "absent": 0} {
		if m, err := g.Mark(context.Background(), key); err != nil || m != want {
			t.Errorf("Mark(%q) = %d, %v; want %d", key, m, err, want)
		}
	}
}

// Every way a conditional write can meet another write between the
// guard's read and its write, each with the guard's decision after it
// reads again.
func TestEvery412Path(t *testing.T) {
	api := versity(t)
	ctx := context.Background()
	// marked writes body as another writer would, under mark.
	marked := func(body, mark string) func(key string) {
		return func(key string) { rawPut(t, api, key, body, map[string]string{"fence-token": mark}) }
	}
	putMine := func(g *s3guard.Guard, key string) (guard.Decision, error) { return g.Put(ctx, key, []byte("mine"), 7) }
	// staleUnder is the refusal of token 7 under the mark required.
	staleUnder := func(required int64) guard.Decision {
		return guard.Decision{Accepted: false, Reason: guard.ReasonStale, Presented: 7, Required: required}
	}
	purgeMine := func(g *s3guard.Guard, key string) (guard.Decision, error) {
		return g.Purge(ctx, key, client.Token{Number: 7})
	}
	cases := []struct {
		name string
		// setup prepares the object; other is the write that lands between
		// the guard's read and its first conditional write.
		setup func(key string)
		other func(key string)
		call  func(g *s3guard.Guard, key string) (guard.Decision, error)
		// want: the decision after the guard read again; writes: the
		// guard's conditional writes, in order.
		want   guard.Decision
		writes []string
		body   string // the object's body at the end ("" absent)
		mark   string
	}{
		{
			name:  "If-Match meets a newer write: refused after reading again",
			setup: marked("old", "5"), other: marked("newer", "9"), call: putMine,
			want: staleUnder(9), writes: []string{"PutObject"}, body: "newer", mark: "9",
		},
		{
			name:  "If-Match meets an older holder's write: written on the second try",
			setup: marked("old", "5"), other: marked("between", "6"), call: putMine,
			want: guard.Decision{Accepted: true, Presented: 7, Required: 6}, writes: []string{"PutObject", "PutObject"}, body: "mine", mark: "7",
		},
		{
			name:  "If-None-Match: * meets a creation",
			setup: func(string) {}, other: marked("created", "8"), call: putMine,
			want: staleUnder(8), writes: []string{"PutObject"}, body: "created", mark: "8",
		},
		{
			name:  "If-Match meets a delete (404 NoSuchKey): created on the second try",
			setup: marked("old", "5"),
			other: func(key string) {
				if _, err := api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: &key}); err != nil {
					t.Fatal(err)
				}
			},
			call:   putMine,
			want:   guard.Decision{Accepted: true, Presented: 7, Required: 0},
			writes: []string{"PutObject", "PutObject"},
			body:   "mine", mark: "7",
		},
		{
			name:   "the same bytes again go as a multipart upload, whose If-Match meets a newer write",
			setup:  marked("same", "5"),
			other:  marked("newer", "9"),
			call:   func(g *s3guard.Guard, key string) (guard.Decision, error) { return g.Put(ctx, key, []byte("same"), 7) },
			want:   staleUnder(9),
			writes: []string{"CompleteMultipartUpload"},
			body:   "newer", mark: "9",
		},
		{
			name:  "a tombstone's If-Match meets a newer write",
			setup: marked("old", "5"),
			other: marked("newer", "9"),
			call: func(g *s3guard.Guard, key string) (guard.Decision, error) {
				return g.Delete(ctx, key, client.Token{Number: 7})
			},
			want:   staleUnder(9),
			writes: []string{"PutObject"},
			body:   "newer", mark: "9",
		},
		{
			name:  "a conditional delete meets an older holder's write: deleted on the second try",
			setup: marked("old", "5"), other: marked("between", "6"), call: purgeMine,
			want: guard.Decision{Accepted: true, Presented: 7, Required: 6}, writes: []string{"DeleteObject", "DeleteObject"},
		},
		{
			name:  "a conditional delete meets a newer write",
			setup: marked("old", "5"), other: marked("newer", "9"), call: purgeMine,
			want: staleUnder(9), writes: []string{"DeleteObject"}, body: "newer", mark: "9",
		},
		{
			name:  "a read that raises the mark meets a newer write",
			setup: marked("old", "5"),
			other: marked("newer", "9"),
			call: func(g *s3guard.Guard, key string) (guard.Decision, error) {
				r, err := g.Get(ctx, key, client.Token{Number: 7})
				if r.Found || r.Body != nil {
					return guard.Decision{}, fmt.Errorf("a refused read returned %+v", r)
				}
				return r.Decision, err
			},
			want:   staleUnder(9),
			writes: []string{"CompleteMultipartUpload"},
			body:   "newer", mark: "9",
		},
		{
			name:  "a read of an absent object meets a creation by an older holder",
			setup: func(string) {},
			other: marked("created", "3"),
			call: func(g *s3guard.Guard, key string) (guard.Decision, error) {
				r, err := g.Get(ctx, key, client.Token{Number: 7})
				if err == nil && (!r.Found || string(r.Body) != "created") {
					return guard.Decision{}, fmt.Errorf("read after the creation = %+v", r)
				}
				return r.Decision, err
			},
			want:   guard.Decision{Accepted: true, Presented: 7, Required: 3},
			writes: []string{"PutObject", "CompleteMultipartUpload"},
			body:   "created", mark: "7",
		},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key := fmt.Sprintf("412/%d", i)
			c.setup(key)
			p := &interposer{API: api}
			p.before = func(_ string, n int) {
				if n == 1 {
					c.other(key)
				}
			}
			d, err := c.call(s3guard.New(p, bucket), key)
			if err != nil {
				t.Fatal(err)
			}
			if d != c.want {
				t.Errorf("decision %+v, want %+v", d, c.want)
			}
			if got := p.writes(); !slices.Equal(got, c.writes) {
				t.Errorf("conditional writes %v, want %v", got, c.writes)
			}
			body, meta, _, found := object(t, api, key)
			if body != c.body || found != (c.body != "") || meta[s3guard.MarkMetadata] != c.mark {
				t.Errorf("object at the end: %q (found %v), mark %q; want %q, mark %q", body, found, meta[s3guard.MarkMetadata], c.body, c.mark)
			}
		})
	}
}

// The write that keeps the ETag: a zombie read the object, the new holder
// wrote the very same bytes under a newer token, then the zombie writes.
// A single PUT of the same bytes would have kept the ETag and let the
// zombie's If-Match through, lowering the mark; the guard's write changes
// the ETag, so the zombie meets a 412 and is refused.
func TestSameBytesUnderANewerTokenFenceTheZombie(t *testing.T) {
	api, g := versityGuard(t)
	ctx := context.Background()
	const key = "same-bytes.txt"
	mustPut(t, g, key, "state: idle", 1)
	_, _, first, _ := object(t, api, key)
	p := &interposer{API: api}
	p.before = func(_ string, n int) {
		if n == 1 { // between the zombie's read and its write
			mustPut(t, g, key, "state: idle", 2)
		}
	}
	d, err := s3guard.New(p, bucket).Put(ctx, key, []byte("state: busy (zombie)"), 1)
	if err != nil || d.Accepted || d.Required != 2 {
		t.Fatalf("the zombie's write = %+v, %v; want refused, required 2", d, err)
	}
	body, meta, etag, _ := object(t, api, key)
	if body != "state: idle" || meta[s3guard.MarkMetadata] != "2" || etag == first {
		t.Fatalf("object %q, mark %q, ETag %s (first %s)", body, meta[s3guard.MarkMetadata], etag, first)
	}
	// And back: the same bytes once more change the ETag again.
	mustPut(t, g, key, "state: idle", 3)
	if _, _, again, _ := object(t, api, key); again == etag {
		t.Fatalf("the ETag %s did not change", again)
	}
}

// A stream is read again from its start when the first PUT meets a 412.
func TestStreamedBodyIsReadAgainAfterA412(t *testing.T) {
	api := versity(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "big")
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	if err := os.WriteFile(path, big, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const key = "big.bin"
	rawPut(t, api, key, "small", map[string]string{"fence-token": "1"})
	p := &drainingFirst{&interposer{API: api}}
	p.before = func(_ string, n int) {
		if n == 1 {
			rawPut(t, api, key, "between", map[string]string{"fence-token": "2"})
		}
	}
	d, err := s3guard.New(p, bucket).PutObject(ctx, s3guard.Object{
		Key: key, Body: f, ContentType: "application/octet-stream", Metadata: map[string]string{"Origin": "test"},
	}, client.Token{Number: 3})
	if err != nil || !d.Accepted {
		t.Fatalf("PutObject = %+v, %v", d, err)
	}
	if n := len(p.writes()); n != 2 {
		t.Fatalf("%d writes, want 2 (one 412)", n)
	}
	body, meta, _, _ := object(t, api, key)
	if body != string(big) || meta["origin"] != "test" || meta[s3guard.MarkMetadata] != "3" {
		t.Fatalf("stored %d bytes (want %d), metadata %v", len(body), len(big), meta)
	}
}

// drainingFirst reads the first write's stream to its end and sends that
// write with an empty body. It is the write the test makes meet a 412:
// versitygw answers a failed precondition before reading a body and resets
// a connection still sending one, which the SDK may see first and report
// as a failed send. The store still decides the 412, and the guard must
// read the stream again from its start, not from where the first write
// left it.
type drainingFirst struct{ *interposer }

func (p *drainingFirst) PutObject(ctx context.Context, in *s3.PutObjectInput, o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	p.hook("PutObject")
	if len(p.writes()) == 1 {
		if _, err := io.Copy(io.Discard, in.Body); err != nil {
			return nil, err
		}
		sent := *in
		sent.Body, sent.ContentLength = bytes.NewReader(nil), new(int64)
		in = &sent
	}
	return p.API.PutObject(ctx, in, o...)
}

// Bad input is refused with an error naming the fault, before anything is
// sent, and changes nothing.
func TestBadInput(t *testing.T) {
	api := newFake()
	ctx := context.Background()
	g := s3guard.New(api, bucket)
	mustPut(t, g, "k", "kept", 9)
	cases := []struct {
		name string
		call func() error
		is   error
		says string
	}{
		{"empty key", func() error { _, err := g.Put(ctx, "", []byte("x"), 10); return err }, s3guard.ErrInvalid, "empty object key"},
		{"negative token", func() error { _, err := g.Put(ctx, "k", []byte("x"), -1); return err }, guard.ErrInvalidToken, ""},
		{"zero token", func() error { _, err := g.Put(ctx, "k", []byte("x"), 0); return err }, guard.ErrInvalidToken, ""},
		{"min int64", func() error { _, err := g.Put(ctx, "k", []byte("x"), math.MinInt64); return err }, guard.ErrInvalidToken, ""},
		{"huge metadata value", func() error {
			_, err := g.PutObject(ctx, s3guard.Object{Key: "k", Metadata: map[string]string{"note": strings.Repeat("x", 1<<20)}}, client.Token{Number: 10})
			return err
		}, s3guard.ErrInvalid, "at most 2 KB"},
		{"metadata just over the bound", func() error {
			_, err := g.PutObject(ctx, s3guard.Object{Key: "k", Metadata: map[string]string{"n": strings.Repeat("x", s3guard.MaxMetadataSize)}}, client.Token{Number: 10})
			return err
		}, s3guard.ErrInvalid, "user metadata of more than 2048 bytes"},
		{"metadata names that differ in case only", func() error {
			_, err := g.PutObject(ctx, s3guard.Object{Key: "k", Metadata: map[string]string{"A": "1", "a": "2"}}, client.Token{Number: 10})
			return err
		}, s3guard.ErrInvalid, "given twice"},
		{"non-ASCII metadata value", func() error {
			_, err := g.PutObject(ctx, s3guard.Object{Key: "k", Metadata: map[string]string{"a": "ü"}}, client.Token{Number: 10})
			return err
		}, s3guard.ErrInvalid, "printable ASCII"},
		{"key of 1025 bytes", func() error { _, err := g.Put(ctx, strings.Repeat("k", 1025), nil, 10); return err }, s3guard.ErrInvalid, "1025 bytes"},
		{"a resource id the lock service refuses", func() error {
			_, err := s3guard.New(api, bucket, s3guard.WithVerifier(&guard.Verifier{})).PutSigned(ctx, strings.Repeat("k", 161), nil, 10, "")
			return err
		}, guard.ErrInvalidResourceID, "the resource of key"},
		{"nil client", func() error { _, err := s3guard.New(nil, bucket).Put(ctx, "k", nil, 10); return err }, s3guard.ErrInvalid, "nil S3 client"},
		{"typed nil client", func() error { _, err := s3guard.New((*s3.Client)(nil), bucket).Put(ctx, "k", nil, 10); return err }, s3guard.ErrInvalid, "nil S3 client"},
		{"empty bucket", func() error { _, err := s3guard.New(api, "").Put(ctx, "k", nil, 10); return err }, s3guard.ErrInvalid, "bucket name"},
		{"bucket with a slash", func() error { _, err := s3guard.New(api, "a/b").Put(ctx, "k", nil, 10); return err }, s3guard.ErrInvalid, "bucket name"},
		{"too few attempts", func() error {
			_, err := s3guard.New(api, bucket, s3guard.WithMaxAttempts(3)).Put(ctx, "k", nil, 10)
			return err
		}, s3guard.ErrInvalid, "at least 16"},
		{"nil verifier", func() error {
			_, err := s3guard.New(api, bucket, s3guard.WithVerifier(nil)).Put(ctx, "k", nil, 10)
			return err
		}, s3guard.ErrInvalid, "WithVerifier(nil)"},
		{"negative read size", func() error {
			_, err := s3guard.New(api, bucket, s3guard.WithMaxReadSize(-1)).Get(ctx, "k", client.Token{Number: 10})
			return err
		}, s3guard.ErrInvalid, "WithMaxReadSize"},
	}
	for _, c := range cases {
		err := c.call()
		if !errors.Is(err, c.is) || !strings.Contains(fmt.Sprint(err), c.says) {
			t.Errorf("%s: %v; want %v saying %q", c.name, err, c.is, c.says)
		}
	}
	if body, meta, _, _ := object(t, api, "k"); body != "kept" || meta[s3guard.MarkMetadata] != "9" || len(api.objects) != 1 {
		t.Fatalf("bad input changed the store: %q %v, %d objects", body, meta, len(api.objects))
	}
}

// A store that refuses conditions that hold would make the guard loop
// forever; it stops with ErrConditionRefused instead. A bound on attempts
// stops a writer that keeps losing with ErrContended; the context, one
// without a bound.
func TestLoopsEnd(t *testing.T) {
	ctx := context.Background()
	api := newFake()
	mustPut(t, s3guard.New(api, bucket), "k", "v", 1)
	api.refuse = true
	if _, err := s3guard.New(api, bucket).Put(ctx, "k", []byte("w"), 2); !errors.Is(err, s3guard.ErrConditionRefused) {
		t.Fatalf("a store refusing every condition: %v", err)
	}
	api.refuse = false

	// Another holder of the same token writes before each of ours: every
	// attempt meets a 412 and reads a new ETag.
	p := &interposer{API: api}
	other := s3guard.New(api, bucket)
	p.before = func(_ string, n int) {
		mustPut(t, other, "k", "other "+strconv.Itoa(n), 2)
	}
	_, err := s3guard.New(p, bucket, s3guard.WithMaxAttempts(16)).Put(ctx, "k", []byte("mine"), 2)
	if !errors.Is(err, s3guard.ErrContended) || len(p.writes()) != 16 {
		t.Fatalf("always beaten, 16 attempts: %v after %d writes", err, len(p.writes()))
	}
	cctx, cancel := context.WithCancel(ctx)
	p2 := &interposer{API: api}
	p2.before = func(_ string, n int) {
		mustPut(t, other, "k", "other "+strconv.Itoa(n), 2)
		if n == 40 {
			cancel()
		}
	}
	if _, err := s3guard.New(p2, bucket).Put(cctx, "k", []byte("mine"), 2); !errors.Is(err, context.Canceled) || len(p2.writes()) != 40 {
		t.Fatalf("always beaten, no bound: %v after %d writes", err, len(p2.writes()))
	}
	if b, _, _, _ := object(t, api, "k"); !strings.HasPrefix(b, "other ") {
		t.Fatalf("body %q", b)
	}
	if api.openUploads() != 0 {
		t.Fatalf("%d multipart uploads left open", api.openUploads())
	}
}

func mustPut(t testing.TB, g *s3guard.Guard, key, body string, token int64) guard.Decision {
	t.Helper()
	d, err := g.Put(context.Background(), key, []byte(body), token)
	if err != nil || !d.Accepted {
		t.Fatalf("Put(%q, %d) = %+v, %v", key, token, d, err)
	}
	return d
}

// CheckStore tells a store that fences (versitygw) from one that ignores
// the conditions (the fake, told to), and leaves nothing behind.
func TestCheckStore(t *testing.T) {
	ctx := context.Background()
	api := versity(t)
	if err := s3guard.New(api, bucket).CheckStore(ctx, "s3guard-check"); err != nil {
		t.Fatalf("versitygw: %v", err)
	}
	if _, _, _, found := object(t, api, "s3guard-check"); found {
		t.Fatal("CheckStore left its object")
	}
	mustPut(t, s3guard.New(api, bucket), "taken", "x", 1)
	if err := s3guard.New(api, bucket).CheckStore(ctx, "taken"); !errors.Is(err, s3guard.ErrInvalid) {
		t.Fatalf("CheckStore on a key in use: %v", err)
	}
	if body, _, _, _ := object(t, api, "taken"); body != "x" {
		t.Fatalf("CheckStore changed a key in use: %q", body)
	}
	fake := newFake()
	fake.ignore = true
	err := s3guard.New(fake, bucket).CheckStore(ctx, "s3guard-check")
	if !errors.Is(err, s3guard.ErrConditionsIgnored) || !strings.Contains(err.Error(), "PutObject If-Match") || !strings.Contains(err.Error(), "DeleteObject If-Match") {
		t.Fatalf("a store ignoring conditions: %v", err)
	}
	if len(fake.objects) != 0 || fake.openUploads() != 0 {
		t.Fatalf("CheckStore left %d objects, %d uploads", len(fake.objects), fake.openUploads())
	}
}
