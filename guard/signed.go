package guard

import (
	"context"
	"strings"
	"sync"

	"github.com/fenceview/fenceview/guard/ledger"
)

// MaxVerified bounds the verifications one VerifyCache remembers. It keeps
// one per resource (the last token verified there), so a holder's repeated
// writes under one grant cost a comparison of bytes, not an Ed25519
// verification; past the bound an arbitrary entry is forgotten, which only
// costs its next writer one verification. (A Guard keeps one per resource
// it holds a mark for, beside the mark: bounded as its marks are.)
const MaxVerified = 1 << 16

// validate is the input check every signed entry point starts with, so
// invalid input is an error before any signature is looked at.
func validate(resourceID string, token int64) error {
	if err := ValidateResourceID(resourceID); err != nil {
		return err
	}
	return ValidateToken(token)
}

// NewSigned returns an empty guard in signed mode: it accepts a token only
// through CheckSigned (or CheckToken) with a signature one of v's keys made
// for that resource and token; anything else is refused with
// ReasonBadSignature before it is compared, and never moves a mark.
func NewSigned(v *Verifier) *Guard {
	if v == nil {
		v = &Verifier{}
	}
	g := &Guard{v: v}
	g.l.UseVerifier(v)
	return g
}

// Verifier returns the keys a guard in signed mode trusts, nil for a guard
// that is not in signed mode.
func (g *Guard) Verifier() *Verifier {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.v
}

// Trust puts the guard in signed mode (if it was not) and trusts key in its
// Verifier. Once any key is trusted, Check refuses every token with
// ReasonBadSignature.
func (g *Guard) Trust(key []byte) error {
	if len(key) != PublicKeySize {
		return ErrInvalidPublicKey
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.v == nil {
		g.v = &Verifier{}
		g.l.UseVerifier(g.v)
	}
	return g.v.Trust(key)
}

// CheckSigned presents a token for a write with the text of its signature
// (base64url without padding, as in X-Fencing-Signature). In signed mode
// the signature must be a trusted key's for an exclusive grant of exactly
// this resource and token: a shared grant's token is refused with
// ReasonSharedToken, anything else with ReasonBadSignature, and neither
// is compared. A verified (resource, token, signature) is remembered, so
// repeating it costs a comparison. A guard not in signed mode ignores the
// signature.
func (g *Guard) CheckSigned(resourceID string, token int64, sig string) (Decision, error) {
	return g.checkSigned(resourceID, token, sig, nil, false)
}

// CheckSignedRead is CheckSigned for a read: the signature of a shared
// grant or of an exclusive one will do. The rule is the same as for a
// write (token >= mark, and the mark rises to the token), so a reader of a
// later phase fences out a writer whose lease ran out, and a later
// writer a reader whose phase ended.
func (g *Guard) CheckSignedRead(resourceID string, token int64, sig string) (Decision, error) {
	return g.checkSigned(resourceID, token, sig, nil, true)
}

// CheckSignedBytes is CheckSigned for a raw signature carrier (64 bytes,
// or a batch carrier).
func (g *Guard) CheckSignedBytes(resourceID string, token int64, sig []byte) (Decision, error) {
	if sig == nil {
		sig = []byte{} // nil selects the text form below
	}
	return g.checkSigned(resourceID, token, "", sig, false)
}

// CheckSignedBytesRead is CheckSignedRead for a raw signature carrier.
func (g *Guard) CheckSignedBytesRead(resourceID string, token int64, sig []byte) (Decision, error) {
	if sig == nil {
		sig = []byte{}
	}
	return g.checkSigned(resourceID, token, "", sig, true)
}

// checkSigned checks a signature given as text, or raw when raw is not nil.
func (g *Guard) checkSigned(resourceID string, token int64, text string, raw []byte, read bool) (Decision, error) {
	g.mu.Lock()
	r, done, err := g.l.Recall(resourceID, token, text, raw, read)
	v := g.v
	g.mu.Unlock()
	if done || err != nil {
		return decided(r, token, err)
	}
	// Ed25519 outside the lock: other resources' writers do not wait.
	gen := v.Generation()
	mode := Unsigned
	if raw != nil {
		mode = v.Mode(resourceID, token, raw, read)
	} else if decoded, derr := DecodeCarrier(text); derr == nil {
		raw = decoded
		mode = v.Mode(resourceID, token, raw, read)
	}
	g.mu.Lock()
	r = g.l.Verified(resourceID, token, raw, text, gen, mode, read)
	g.mu.Unlock()
	return decision(r, token), nil
}

// CheckRead presents token for a read: the rule is a write's (token >=
// mark, and the mark rises). Outside signed mode a guard cannot tell a
// shared token from an exclusive one, so this is Check; in signed mode it
// refuses every token, as Check does (CheckSignedRead takes the
// signature).
func (g *Guard) CheckRead(resourceID string, token int64) (Decision, error) {
	return g.Check(resourceID, token)
}

// VerifyCache is a Verifier with a guard's memory of verifications, for
// guards that keep their marks elsewhere (a database, the server's own
// record): Verify does the Ed25519 work once per (resource, token,
// signature) and then compares bytes. It is safe for concurrent use.
type VerifyCache struct {
	v     *Verifier
	mu    sync.Mutex
	cache map[string]ledger.Verification // by resource id, at most MaxVerified
}

// NewVerifyCache returns an empty cache over v's keys.
func NewVerifyCache(v *Verifier) *VerifyCache {
	if v == nil {
		v = &Verifier{}
	}
	return &VerifyCache{v: v, cache: make(map[string]ledger.Verification)}
}

// Verifier returns the keys the cache checks against.
func (c *VerifyCache) Verifier() *Verifier { return c.v }

// Verify reports whether sig (text) is a trusted key's signature of an
// exclusive grant of token on resourceID, remembering a yes.
func (c *VerifyCache) Verify(resourceID string, token int64, sig string) bool {
	return c.Mode(resourceID, token, sig, false) == Exclusive
}

// Mode reports what sig (text) proves about token on resourceID
// (Exclusive, Shared or Unsigned), remembering a signature that verified.
// read says which mode to try first.
func (c *VerifyCache) Mode(resourceID string, token int64, sig string, read bool) Mode {
	if validate(resourceID, token) != nil {
		return Unsigned
	}
	c.mu.Lock()
	e := c.cache[resourceID]
	hit := e.Recalls(token, sig, nil, c.v.Generation())
	c.mu.Unlock()
	if hit {
		return e.Mode()
	}
	gen := c.v.Generation() // before the work: a key distrusted meanwhile expires the entry
	raw, err := DecodeCarrier(sig)
	if err != nil {
		return Unsigned
	}
	mode := c.v.Mode(resourceID, token, raw, read)
	if mode == Unsigned {
		return Unsigned
	}
	c.mu.Lock()
	c.remember(resourceID, token, raw, sig, gen, mode)
	c.mu.Unlock()
	return mode
}

// remember records a successful verification in the bounded cache. c.mu
// is held.
func (c *VerifyCache) remember(resourceID string, token int64, raw []byte, text string, gen uint64, mode Mode) {
	e, ok := c.cache[resourceID]
	if !ok {
		if len(c.cache) >= MaxVerified {
			for k := range c.cache { // map order is random: an arbitrary victim
				delete(c.cache, k)
				break
			}
		}
		resourceID = strings.Clone(resourceID)
	}
	e.Remember(token, raw, text, gen, mode)
	c.cache[resourceID] = e
}

// SignedChecker is a Checker that takes a token's signature: *Guard and
// *sqlguard.Marks. In signed mode it verifies the signature before
// comparing; otherwise it ignores it.
type SignedChecker interface {
	Checker
	CheckSigned(resourceID string, token int64, sig string) (Decision, error)
}

// SignedContextChecker is a SignedChecker that takes a context
// (*sqlguard.Marks); CheckSignedWith prefers it.
type SignedContextChecker interface {
	CheckSignedContext(ctx context.Context, resourceID string, token int64, sig string) (Decision, error)
}

// SignedReadChecker is a SignedChecker that tells reads from writes:
// *Guard and *sqlguard.Marks. A read takes a shared grant's token (a read
// phase's) as well as an exclusive one's, under the same rule.
type SignedReadChecker interface {
	CheckSignedRead(resourceID string, token int64, sig string) (Decision, error)
}

// SignedReadContextChecker is a SignedReadChecker that takes a context
// (*sqlguard.Marks); CheckReadWith prefers it.
type SignedReadContextChecker interface {
	CheckSignedReadContext(ctx context.Context, resourceID string, token int64, sig string) (Decision, error)
}

// CheckReadWith checks a read with token and its signature sig (text; ""
// for none) through c. The rule is a write's (token >= mark, and the mark
// rises), so a checker that cannot tell reads from writes checks it as a
// write (CheckSignedWith): it then refuses a shared grant's token, which
// is safe, if not what a reader wants.
func CheckReadWith(ctx context.Context, c Checker, resourceID string, token int64, sig string) (Decision, error) {
	if rc, ok := c.(SignedReadContextChecker); ok {
		return rc.CheckSignedReadContext(ctx, resourceID, token, sig)
	}
	if rc, ok := c.(SignedReadChecker); ok && sig != "" {
		return rc.CheckSignedRead(resourceID, token, sig)
	}
	return CheckSignedWith(ctx, c, resourceID, token, sig)
}

// CheckSignedWith checks token and its signature sig (text; "" for none)
// through c. A Checker that takes no signature cannot be in signed mode, so
// it compares the token alone, as CheckWith does.
//
// An unsigned token goes to the plain entry point (CheckWith, so a
// ContextChecker still gets ctx): in signed mode that refuses it anyway.
func CheckSignedWith(ctx context.Context, c Checker, resourceID string, token int64, sig string) (Decision, error) {
	if sc, ok := c.(SignedContextChecker); ok {
		return sc.CheckSignedContext(ctx, resourceID, token, sig)
	}
	if sc, ok := c.(SignedChecker); ok && sig != "" {
		return sc.CheckSigned(resourceID, token, sig)
	}
	return CheckWith(ctx, c, resourceID, token)
}
