// Package s3guard fences writes to objects in Amazon S3 and S3-compatible
// object stores, with the store's conditional PUT as the atomic step.
//
// An object's mark is its user metadata fence-token (the header
// x-amz-meta-fence-token, a decimal token). A fenced write reads the
// object's mark and ETag (one HEAD), refuses a token below the mark
// (stale-token, nothing written), and otherwise writes the body and the
// new mark in one PutObject conditional on If-Match: <etag>, or
// If-None-Match: * when there is no object yet. The store applies the
// condition and the write as one step, as a database applies a
// conditional UPDATE. A 412 means another write came first: the guard
// reads and decides again. Each 412 is another writer's success, so this
// ends; it goes on until decided or the context ends.
//
//	g := s3guard.New(s3Client, "orders")              // s3Client: *s3.Client
//	d, err := g.Put(ctx, "orders/42.json", body, token)
//	if err != nil { /* bad input, the store's error */ }
//	if !d.Accepted { /* fenced out: d.Required beat us; nothing written */ }
//
// A token equal to the mark is accepted: one holder writes many times
// under one grant. Built from a fenceview client, the guard takes only
// tokens the server signed, as a lock gives them:
//
//	g, err := s3guard.NewFrom(ctx, fv, s3Client, "orders") // fv: *client.Client
//	d, err := g.PutObject(ctx, s3guard.Object{Key: "orders/42.json", Body: f}, m.Token())
//
// # Notes
//
//   - Decisions and reasons are the other guards': guard.Decision,
//     guard.ReasonStale, d.Err(key) for a *guard.RefusalError;
//     guard.ErrInvalidToken and ErrInvalid for bad input, which sends
//     nothing.
//   - Built from a fenceview client (NewFrom), a guard verifies
//     signatures with the server's keys (refusing unsigned and forged
//     tokens, bad-signature; a shared lock's token presented for a write,
//     shared-token) and reports its refusals to the server, so they show
//     in the rejection history and on the dashboard. New with
//     WithVerifier gives signed mode without reports; WithReporter,
//     reports without it.
//   - Which lock governs an object is the guard's to say (WithResource;
//     by default the object's key). Signatures are checked, and refusals
//     reported, for that resource; marks are per object.
//   - PutObject streams a large body from an io.ReadSeeker: a write that
//     meets a 412 is sent again, so the body must be read again from its
//     start.
//   - ETags: S3 makes a single PUT's ETag the MD5 of its body, so writing
//     the very bytes that are there would keep the ETag, and a writer that
//     read the old mark could still match it. The guard never lets a write
//     keep the ETag it read: such a write goes as a one-part multipart
//     upload, whose ETag has another form. A writer whose read is older
//     than two writes that put back the bytes it read (A, then B, then A
//     again) is beyond any ETag condition: bodies that carry their token
//     (a manifest does) are exact in every case. docs/fencing-your-resource.md
//     says more.
//   - Reads (Get), deletes (Delete: a tombstone that keeps the mark;
//     Purge: the store's conditional delete) and the marker-object
//     pattern are in their own files' docs and in examples/s3manifest.
//   - A store that ignores the conditions fences nothing: CheckStore
//     finds out, on a scratch key.
package s3guard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/guard"
)

// API is what a Guard asks of the store: the calls of aws-sdk-go-v2's
// S3 client it makes. *s3.Client is one; a wrapper (metrics, tests) is
// another.
type API interface {
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	CreateMultipartUpload(ctx context.Context, in *s3.CreateMultipartUploadInput, optFns ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error)
	UploadPart(ctx context.Context, in *s3.UploadPartInput, optFns ...func(*s3.Options)) (*s3.UploadPartOutput, error)
	CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, optFns ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error)
	AbortMultipartUpload(ctx context.Context, in *s3.AbortMultipartUploadInput, optFns ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error)
}

var _ API = (*s3.Client)(nil)

// Names of the user metadata the guard keeps on an object. No write may
// set them itself.
const (
	// MarkMetadata holds the object's mark, a decimal token.
	MarkMetadata = "fence-token"
	// TombstoneMetadata is "true" on a tombstone: an empty object that
	// Delete leaves to keep the mark of a deleted object.
	TombstoneMetadata = "fence-tombstone"
)

// Bounds on a call, so that invalid input is refused before anything is
// sent, with an error that says what is wrong.
const (
	// MaxKeyLen is the longest object key, in bytes (S3's limit).
	MaxKeyLen = 1024
	// MaxMetadataSize bounds the user metadata of an object, names and
	// values together, the guard's own included (S3's limit is 2 KB).
	MaxMetadataSize = 2048
	// MaxPutSize is the largest body of one write: S3's largest single
	// PUT (5 GiB).
	MaxPutSize = 5 << 30
	// MaxContentTypeLen bounds Object.ContentType.
	MaxContentTypeLen = 256
	// MinAttempts is the least WithMaxAttempts takes: 16 writers racing
	// for one object must all get a decision, and each 412 one of them
	// meets is another's success.
	MinAttempts = 16
	// DefaultMaxReadSize is the largest body Get reads unless
	// WithMaxReadSize says otherwise.
	DefaultMaxReadSize = 64 << 20
)

// Errors a call may return besides guard.ErrInvalidToken and the store's
// own. Match them with errors.Is.
var (
	// ErrInvalid: a malformed call or configuration (a bad key, bucket,
	// metadata or option). Nothing was sent to the store.
	ErrInvalid = errors.New("s3guard: invalid call")
	// ErrContended: the attempts WithMaxAttempts allows all met a 412.
	// Nothing of this call was written.
	ErrContended = errors.New("s3guard: other writes kept coming first")
	// ErrConditionRefused: the store kept refusing a condition that held
	// (the same ETag read again after each 412); it does not implement
	// conditional writes as S3 does.
	ErrConditionRefused = errors.New("s3guard: the store refuses conditional writes that match")
	// ErrNotReported: the decision stands (a refused write wrote nothing),
	// but the fenceview server could not record it. The call returns the
	// decision with this error.
	ErrNotReported = errors.New("s3guard: decision not reported to fenceview")
	// ErrTooLarge: Get met an object larger than WithMaxReadSize.
	ErrTooLarge = errors.New("s3guard: object larger than the guard reads")
)

// Guard fences writes to the objects of one bucket. It is immutable and
// safe for concurrent use.
type Guard struct {
	api         API
	bucket      string
	err         error // a bad configuration, returned by every call
	sig         *signatures
	reporter    Reporter // refusals are reported to it; nil: not reported
	resource    func(key string) string
	source      string
	maxAttempts int
	maxRead     int64
}

// Option configures New.
type Option func(*options)

type options struct {
	verifier       *guard.Verifier
	reporter       Reporter
	acceptUnsigned bool
	resource       func(string) string
	source         string
	maxAttempts    int
	maxRead        int64
	errs           []error
}

// WithVerifier puts the guard in signed mode: a token is compared only
// with a signature one of v's keys made for the object's resource and the
// token (PutSigned, PutObject with a signed token); anything else
// is refused with guard.ReasonBadSignature before the store is written.
func WithVerifier(v *guard.Verifier) Option {
	return func(o *options) {
		if v == nil {
			o.errs = append(o.errs, fmt.Errorf("%w: WithVerifier(nil)", ErrInvalid))
		}
		o.verifier = v
	}
}

// Reporter records a guard's refusals at a fenceview server, so they
// are in its rejection history and on its dashboard: *client.Client is
// one.
type Reporter interface {
	Report(ctx context.Context, reports ...client.Report) (int, error)
}

// WithReporter reports every refusal to r (POST /v1/decisions), under the
// object's resource and the guard's source (WithSource). NewFrom does it
// when its key source is a Reporter.
func WithReporter(r Reporter) Option {
	return func(o *options) {
		if r == nil {
			o.errs = append(o.errs, fmt.Errorf("%w: WithReporter(nil)", ErrInvalid))
		}
		o.reporter = r
	}
}

// AcceptUnsignedTokens makes a guard built from a client (NewFrom) take
// any token number, signed or not, as New without WithVerifier does:
// whoever can call your code with a high number then locks the real
// holder out. For a server that does not sign, or a test. Only NewFrom
// reads it.
func AcceptUnsignedTokens() Option {
	return func(o *options) { o.acceptUnsigned = true }
}

// WithResource says which lock governs an object: signatures are checked,
// and refusals reported, for resource(key). The default is the key
// itself. A token presented for another resource (a client.Token's
// Resource) is refused with guard.ReasonScopeMismatch.
func WithResource(resource func(key string) string) Option {
	return func(o *options) {
		if resource == nil {
			o.errs = append(o.errs, fmt.Errorf("%w: WithResource(nil)", ErrInvalid))
		}
		o.resource = resource
	}
}

// WithSource names the guard in its reports (default "s3guard").
func WithSource(name string) Option {
	return func(o *options) {
		if name == "" || len(name) > 80 || !utf8.ValidString(name) {
			o.errs = append(o.errs, fmt.Errorf("%w: source %q: 1..80 bytes of UTF-8", ErrInvalid, truncate(name)))
		}
		o.source = name
	}
}

// WithMaxAttempts bounds the conditional writes one call makes (at least
// MinAttempts); after that many 412s it returns ErrContended. The default
// is no bound but the context's: every 412 is another write's success, so
// a call ends once the writers racing it have written.
func WithMaxAttempts(n int) Option {
	return func(o *options) {
		if n < MinAttempts {
			o.errs = append(o.errs, fmt.Errorf("%w: WithMaxAttempts(%d): at least %d", ErrInvalid, n, MinAttempts))
		}
		o.maxAttempts = n
	}
}

// WithMaxReadSize bounds the body Get reads (default DefaultMaxReadSize).
func WithMaxReadSize(n int64) Option {
	return func(o *options) {
		if n < 0 || n > MaxPutSize {
			o.errs = append(o.errs, fmt.Errorf("%w: WithMaxReadSize(%d): 0..%d", ErrInvalid, n, int64(MaxPutSize)))
		}
		o.maxRead = n
	}
}

// New returns a guard of the objects of bucket, reached through api
// (*s3.Client). Without WithVerifier it takes any token number: build the
// guard from your fenceview client with NewFrom, which verifies the
// server's signatures. A bad bucket name or option is returned by every
// call (errors.Is ErrInvalid), so New itself cannot fail.
func New(api API, bucket string, opts ...Option) *Guard {
	g, o := build(api, bucket, opts)
	if o.verifier != nil {
		g.sig = newSignatures(o.verifier, nil)
	}
	return g
}

// NewFrom is New for a guard built from a fenceview client (keys: a
// *client.Client): it takes only tokens the client's server signed, with
// the keys the server publishes now (GET /v1/signing-keys), fetched again
// when a signature does not verify (a rotation) at most once a second,
// and every minute. A bare number, a forged or another resource's
// signature is refused with guard.ReasonBadSignature before the store is
// written. When keys is also a Reporter (a *client.Client is), refusals
// are reported to the server. Present tokens with PutObject (the
// client.Token the lock returned) or PutSigned.
//
// AcceptUnsignedTokens turns verification off (for a server that does
// not sign); without it, a server that publishes no keys is
// guard.ErrNoSigningKeys. WithVerifier may not be given: the keys are the
// server's.
func NewFrom(ctx context.Context, keys guard.KeySource, api API, bucket string, opts ...Option) (*Guard, error) {
	g, o := build(api, bucket, opts)
	if g.err != nil {
		return nil, g.err
	}
	if o.verifier != nil {
		return nil, fmt.Errorf("%w: NewFrom verifies with the server's keys; a Verifier of your own goes to New", ErrInvalid)
	}
	if keys == nil {
		return nil, fmt.Errorf("%w: NewFrom without a key source", ErrInvalid)
	}
	if r, ok := keys.(Reporter); ok && g.reporter == nil {
		g.reporter = r
	}
	if !o.acceptUnsigned {
		v, err := guard.VerifierFrom(ctx, keys)
		if err != nil {
			return nil, err
		}
		g.sig = newSignatures(v, keys)
		g.sig.fetched = g.sig.now()
	}
	return g, nil
}

// build is what New and NewFrom share: the options, checked.
func build(api API, bucket string, opts []Option) (*Guard, options) {
	o := options{source: "s3guard", maxRead: DefaultMaxReadSize}
	for _, opt := range opts {
		opt(&o)
	}
	g := &Guard{api: api, bucket: bucket, reporter: o.reporter, resource: o.resource, source: o.source, maxAttempts: o.maxAttempts, maxRead: o.maxRead}
	switch {
	case api == nil || isNilAPI(api):
		o.errs = append(o.errs, fmt.Errorf("%w: nil S3 client", ErrInvalid))
	case bucket == "" || len(bucket) > 255 || strings.ContainsAny(bucket, "/") || hasControl(bucket) || !utf8.ValidString(bucket):
		o.errs = append(o.errs, fmt.Errorf("%w: bucket name %q", ErrInvalid, truncate(bucket)))
	}
	g.err = errors.Join(o.errs...)
	return g, o
}

// isNilAPI catches a typed nil (*s3.Client)(nil) in the interface.
func isNilAPI(api API) bool {
	c, ok := api.(*s3.Client)
	return ok && c == nil
}

// Bucket returns the bucket the guard writes to.
func (g *Guard) Bucket() string { return g.bucket }

// Signed reports whether the guard is in signed mode.
func (g *Guard) Signed() bool { return g.sig != nil }

// Object is one write: a key, its body and what the store keeps beside it.
type Object struct {
	Key string
	// Body is read from its start, and read again from its start when the
	// write meets a 412 (the guard seeks it), so it must not change while
	// the call runs. Nil is an empty object. An *os.File, *bytes.Reader or
	// *strings.Reader will do.
	Body io.ReadSeeker
	// ContentType is stored as the object's Content-Type ("" leaves the
	// store's default).
	ContentType string
	// Metadata is the object's user metadata beside the mark: names of
	// letters, digits, '-', '_' and '.', values of printable ASCII, at
	// most MaxMetadataSize bytes in all with the mark.
	Metadata map[string]string
}

// Put writes body to key under token if token is at least the object's
// mark, and records token as the mark, in one conditional PUT. An
// accepted write's Decision has Required set to the mark it replaced (0
// for none); a refused one has Reason guard.ReasonStale and Required the
// mark that beat token, and nothing was written. Refusals are decisions,
// not errors. A guard in signed mode refuses a bare number
// (bad-signature): use PutSigned or PutObject.
func (g *Guard) Put(ctx context.Context, key string, body []byte, token int64) (guard.Decision, error) {
	return g.put(ctx, Object{Key: key, Body: bytesReader(body)}, presented{number: token})
}

// PutSigned is Put for a signed token: sig is its signature text, as a
// grant gives it (X-Fencing-Signature). A guard not in signed mode
// ignores it.
func (g *Guard) PutSigned(ctx context.Context, key string, body []byte, token int64, sig string) (guard.Decision, error) {
	return g.put(ctx, Object{Key: key, Body: bytesReader(body)}, presented{number: token, sig: sig})
}

// PutObject is Put for a streamed body, a content type and user
// metadata, presenting a lock's token as the client gives it (the
// client.Token of Mutex.Token, a permit's, an election's): its number and
// signature, and its resource, which must be the one governing o.Key
// (WithResource). client.Token{Number: n} presents a bare number.
func (g *Guard) PutObject(ctx context.Context, o Object, tok guard.SignedToken) (guard.Decision, error) {
	t, err := presentationOf(tok)
	if err != nil {
		return guard.Decision{}, err
	}
	return g.put(ctx, o, t)
}

func (g *Guard) put(ctx context.Context, o Object, t presented) (guard.Decision, error) {
	if err := g.check(o.Key, t.number); err != nil {
		return guard.Decision{}, err
	}
	b, err := newBody(o.Body)
	if err != nil {
		return guard.Decision{}, err
	}
	meta, err := userMetadata(o.Metadata)
	if err != nil {
		return guard.Decision{}, err
	}
	if len(o.ContentType) > MaxContentTypeLen || !printable(o.ContentType) {
		return guard.Decision{}, fmt.Errorf("%w: content type %q: at most %d bytes of printable ASCII", ErrInvalid, truncate(o.ContentType), MaxContentTypeLen)
	}
	w := write{key: o.Key, body: b, contentType: o.ContentType, meta: meta}
	return g.decideAndWrite(ctx, t, w)
}

// check validates what every call takes: the configuration, a key, a
// token.
func (g *Guard) check(key string, token int64) error {
	if g.err != nil {
		return g.err
	}
	if err := validateKey(key); err != nil {
		return err
	}
	return guard.ValidateToken(token)
}

// resourceOf returns the resource governing key, validated when it is
// needed (signed mode, reports, a token that names its resource).
func (g *Guard) resourceOf(key string, t presented) (string, error) {
	res := key
	if g.resource != nil {
		res = g.resource(key)
	}
	if g.sig == nil && g.reporter == nil && t.resource == "" {
		return res, nil
	}
	if err := guard.ValidateResourceID(res); err != nil {
		return "", fmt.Errorf("%w: the resource of key %q: %w", ErrInvalid, truncate(key), err)
	}
	return res, nil
}

// refusalFor returns the resource governing key and the reason, if any,
// to refuse t for access a whatever the object's mark.
func (g *Guard) refusalFor(ctx context.Context, key string, t presented, a access) (res, reason string, err error) {
	res, err = g.resourceOf(key, t)
	if err != nil {
		return "", "", err
	}
	reason, err = g.refusal(ctx, res, t, a)
	if err != nil {
		return "", "", err
	}
	return res, reason, nil
}

// decideAndWrite is every write's loop: verify the token, read the
// object's mark and ETag, decide, write conditionally; on a 412 read and
// decide again.
func (g *Guard) decideAndWrite(ctx context.Context, t presented, w write) (guard.Decision, error) {
	res, reason, err := g.refusalFor(ctx, w.key, t, accessWrite)
	if err != nil {
		return guard.Decision{}, err
	}
	var lp loopState
	for {
		st, err := g.head(ctx, w.key)
		if err != nil {
			return guard.Decision{}, err
		}
		d := decide(st.mark, t.number, reason)
		if !d.Accepted {
			return g.reported(ctx, res, d, t.sig)
		}
		err = g.putConditional(ctx, w, st, t.number)
		if err == nil {
			return d, nil
		}
		if err := lp.again(ctx, g.maxAttempts, st, err); err != nil {
			return guard.Decision{}, fmt.Errorf("s3guard: put %q: %w", w.key, err)
		}
	}
}

// decide applies the rule, or refuses with reason when the token may not
// be compared (its signature, its resource, its access).
func decide(mark, token int64, reason string) guard.Decision {
	if reason != "" {
		return guard.Decision{Accepted: false, Reason: reason, Presented: token, Required: mark}
	}
	return guard.Evaluate(mark, token)
}

// reported reports a refusal, when the guard has a reporter, and returns
// it.
func (g *Guard) reported(ctx context.Context, res string, d guard.Decision, sig string) (guard.Decision, error) {
	if g.reporter == nil || d.Accepted {
		return d, nil
	}
	_, err := g.reporter.Report(ctx, client.Report{Resource: res, Decision: d, Source: g.source, Signature: sig})
	if err != nil {
		return d, fmt.Errorf("%w: %w", ErrNotReported, err)
	}
	return d, nil
}

// loopState counts a call's conditional writes that met a 412.
type loopState struct {
	attempts int
	last     objectState
	same     int // 412s after which the object read back unchanged
}

// maxSame is how many times in a row a 412 may leave the object as it was
// read before the guard gives up on the store: once is a race (another
// write, then one that put the same bytes back); several times is a store
// that refuses conditions that hold.
const maxSame = 3

// again decides whether a failed conditional write is tried again: nil
// for a 412 (or its kin) within the bounds, the error otherwise.
func (lp *loopState) again(ctx context.Context, maxAttempts int, st objectState, err error) error {
	if !conflict(err) {
		return err
	}
	lp.attempts++
	if st == lp.last && lp.attempts > 1 {
		lp.same++
		if lp.same >= maxSame {
			return fmt.Errorf("%w: %w", ErrConditionRefused, err)
		}
	} else {
		lp.same = 0
	}
	lp.last = st
	if maxAttempts > 0 && lp.attempts >= maxAttempts {
		return fmt.Errorf("%w: %d attempts", ErrContended, lp.attempts)
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%w (after %d writes met a 412)", cerr, lp.attempts)
	}
	return nil
}

func validateKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty object key", ErrInvalid)
	case len(key) > MaxKeyLen:
		return fmt.Errorf("%w: object key of %d bytes, at most %d", ErrInvalid, len(key), MaxKeyLen)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: object key %q is not UTF-8", ErrInvalid, truncate(key))
	case hasControl(key):
		return fmt.Errorf("%w: object key %q has a control character", ErrInvalid, truncate(key))
	}
	return nil
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func truncate(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}

// presented is a token as a call presents it: its number, its signature
// ("" for none) and the resource it was granted for ("" when not said).
type presented struct {
	resource string
	number   int64
	sig      string
}

// presentedFor is tok as presented for key, with what every call takes
// checked.
func (g *Guard) presentedFor(key string, tok guard.SignedToken) (presented, error) {
	t, err := presentationOf(tok)
	if err != nil {
		return presented{}, err
	}
	if err := g.check(key, t.number); err != nil {
		return presented{}, err
	}
	return t, nil
}

func presentationOf(tok guard.SignedToken) (presented, error) {
	if tok == nil {
		return presented{}, fmt.Errorf("%w: nil token", ErrInvalid)
	}
	res, n, sig := tok.SignedToken()
	return presented{resource: res, number: n, sig: sig}, nil
}
