package guard

import (
	"context"
	"strings"
	"sync"
)

// MaxVerified bounds the verifications one VerifyCache remembers. It keeps
// one per resource (the last token verified there), so a holder's repeated
// writes under one grant cost a comparison of bytes, not an Ed25519
// verification; past the bound an arbitrary entry is forgotten, which only
// costs its next writer one verification. (A Guard or Ledger keeps one per
// resource it holds a mark for, beside the mark: bounded as its marks are.)
const MaxVerified = 1 << 16

// verified is a (token, signature) whose signature a trusted key made for
// the resource it is stored under, in generation gen of the verifier.
type verified struct {
	token int64
	gen   uint64
	text  string
	raw   [SignatureSize]byte
}

// hitText reports whether e is exactly this (token, signature text),
// verified in generation gen. Only canonical text ever verifies, so equal
// text means equal signature bytes.
func (e *verified) hitText(token int64, sig string, gen uint64) bool {
	// e.text is "" when only the raw form was verified: "" must not match.
	return e.token == token && e.token != 0 && e.gen == gen && e.text != "" && e.text == sig
}

// hitRaw is hitText for a raw signature.
func (e *verified) hitRaw(token int64, sig []byte, gen uint64) bool {
	return e.token == token && e.token != 0 && e.gen == gen && string(e.raw[:]) == string(sig)
}

// set records a verification. The text is cloned: callers (the WebAssembly
// exports) may pass strings that alias buffers they reuse. It is kept only
// when given, so a guard fed raw signatures stores no text.
func (e *verified) set(token int64, raw [SignatureSize]byte, text string, gen uint64) {
	if e.token == token && e.raw == raw && e.gen == gen && (text == "" || e.text == text) {
		return
	}
	e.token, e.raw, e.gen, e.text = token, raw, gen, strings.Clone(text)
}

// signedMode is what a guard in signed mode adds to its marks: the keys it
// trusts, and for VerifyCache the verifications it remembers by resource id
// (a Ledger keeps its own by handle, beside its marks). It has no lock: its
// owner's lock protects cache; v is set once and is safe for concurrent use
// on its own.
type signedMode struct {
	v     *Verifier
	cache map[string]verified
}

func newSignedMode(v *Verifier) *signedMode {
	if v == nil {
		v = &Verifier{}
	}
	return &signedMode{v: v}
}

// cachedText reports whether exactly this (resource, token, signature text)
// was verified under keys that are all still trusted. Only canonical text
// ever verifies, so equal text means equal signature bytes.
func (s *signedMode) cachedText(resourceID string, token int64, sig string) bool {
	e, ok := s.cache[resourceID]
	return ok && e.hitText(token, sig, s.v.gen.Load())
}

// cachedRaw is cachedText for a raw signature.
func (s *signedMode) cachedRaw(resourceID string, token int64, sig []byte) bool {
	e, ok := s.cache[resourceID]
	return ok && e.hitRaw(token, sig, s.v.gen.Load())
}

// verifyText does the Ed25519 work for a signature text, without touching
// the cache (so a guard can run it outside its lock). gen is the verifier's
// generation before the work, for remember.
func (s *signedMode) verifyText(resourceID string, token int64, sig string) (raw [SignatureSize]byte, gen uint64, ok bool) {
	gen = s.v.gen.Load()
	raw, err := DecodeSignature(sig)
	if err != nil {
		return raw, gen, false
	}
	return raw, gen, s.v.Verify(resourceID, token, raw[:])
}

// verify is verifyText, or verifyRaw when raw is not nil.
func (s *signedMode) verify(resourceID string, token int64, text string, raw []byte) ([SignatureSize]byte, uint64, bool) {
	if raw != nil {
		return s.verifyRaw(resourceID, token, raw)
	}
	return s.verifyText(resourceID, token, text)
}

// verifyRaw is verifyText for a raw signature.
func (s *signedMode) verifyRaw(resourceID string, token int64, sig []byte) (raw [SignatureSize]byte, gen uint64, ok bool) {
	gen = s.v.gen.Load()
	if len(sig) != SignatureSize {
		return raw, gen, false
	}
	copy(raw[:], sig)
	return raw, gen, s.v.Verify(resourceID, token, raw[:])
}

// remember records a successful verification in the bounded cache.
func (s *signedMode) remember(resourceID string, token int64, raw [SignatureSize]byte, text string, gen uint64) {
	if e, ok := s.cache[resourceID]; ok {
		e.set(token, raw, text, gen)
		s.cache[resourceID] = e
		return
	}
	if len(s.cache) >= MaxVerified {
		for k := range s.cache { // map order is random: an arbitrary victim
			delete(s.cache, k)
			break
		}
	}
	var e verified
	e.set(token, raw, text, gen)
	s.cache[strings.Clone(resourceID)] = e
}

// badSignature is the refusal of a token whose signature did not verify:
// like every refusal that is not stale-token, Required is the current mark.
func badSignature(token, highWater int64) Decision {
	return Decision{Accepted: false, Reason: ReasonBadSignature, Presented: token, Required: highWater}
}

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
	return &Guard{l: Ledger{signed: newSignedMode(v)}}
}

// Verifier returns the keys a guard in signed mode trusts, nil for a guard
// that is not in signed mode.
func (g *Guard) Verifier() *Verifier { return g.l.Verifier() }

// Trust puts the guard in signed mode (if it was not) and trusts key; see
// Ledger.Trust.
func (g *Guard) Trust(key []byte) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.l.Trust(key)
}

// CheckSigned presents a token with the text of its signature (base64url
// without padding, as in X-Fencing-Signature). In signed mode the signature
// must be a trusted key's for exactly this resource and token, or the token
// is refused with ReasonBadSignature and not compared; a verified
// (resource, token, signature) is remembered, so repeating it costs a
// comparison. A guard not in signed mode ignores the signature.
func (g *Guard) CheckSigned(resourceID string, token int64, sig string) (Decision, error) {
	return g.checkSigned(resourceID, token, sig, nil)
}

// CheckSignedBytes is CheckSigned for a raw 64-byte signature.
func (g *Guard) CheckSignedBytes(resourceID string, token int64, sig []byte) (Decision, error) {
	if sig == nil {
		sig = []byte{} // nil selects the text form below
	}
	return g.checkSigned(resourceID, token, "", sig)
}

func (g *Guard) checkSigned(resourceID string, token int64, text string, raw []byte) (Decision, error) {
	g.mu.Lock()
	d, done, err := g.l.signedFast(resourceID, token, text, raw)
	s := g.l.signed
	g.mu.Unlock()
	if done || err != nil {
		return d, err
	}
	// Ed25519 outside the lock: other resources' writers do not wait.
	sig, gen, ok := s.verify(resourceID, token, text, raw)
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.l.afterVerify(resourceID, token, sig, text, gen, ok), nil
}

// NewSignedLedger returns an empty Ledger in signed mode (see NewSigned).
func NewSignedLedger(v *Verifier) *Ledger {
	return &Ledger{signed: newSignedMode(v)}
}

// Verifier returns the keys a ledger in signed mode trusts, or nil.
func (l *Ledger) Verifier() *Verifier {
	if l.signed == nil {
		return nil
	}
	return l.signed.v
}

// Trust puts the ledger in signed mode (if it was not) and trusts key. Once
// any key is trusted, Check refuses every token with ReasonBadSignature:
// the WebAssembly guard's guard_trust_key.
func (l *Ledger) Trust(key []byte) error {
	if len(key) != PublicKeySize {
		return ErrInvalidPublicKey
	}
	if l.signed == nil {
		l.signed = newSignedMode(nil)
		l.sigs = make([]verified, len(l.marks))
	}
	return l.signed.v.Trust(key)
}

// CheckSigned is Guard.CheckSigned.
func (l *Ledger) CheckSigned(resourceID string, token int64, sig string) (Decision, error) {
	return l.checkSigned(resourceID, token, sig, nil)
}

// CheckSignedBytes is Guard.CheckSignedBytes.
func (l *Ledger) CheckSignedBytes(resourceID string, token int64, sig []byte) (Decision, error) {
	if sig == nil {
		sig = []byte{}
	}
	return l.checkSigned(resourceID, token, "", sig)
}

func (l *Ledger) checkSigned(resourceID string, token int64, text string, raw []byte) (Decision, error) {
	d, done, err := l.signedFast(resourceID, token, text, raw)
	if done || err != nil {
		return d, err
	}
	sig, gen, ok := l.signed.verify(resourceID, token, text, raw)
	return l.afterVerify(resourceID, token, sig, text, gen, ok), nil
}

// signedFast is the part of a signed check that needs no Ed25519: input
// validation, the plain rule outside signed mode, and the remembered
// verification of this resource. done is false when the signature must be
// verified (then afterVerify finishes). The signature is text, or raw when
// raw is not nil.
func (l *Ledger) signedFast(resourceID string, token int64, text string, raw []byte) (d Decision, done bool, err error) {
	h, err := l.find(resourceID) // validates only ids not seen before
	if err != nil {
		return Decision{}, true, err
	}
	if err := ValidateToken(token); err != nil {
		return Decision{}, true, err
	}
	if l.signed == nil {
		if h == 0 {
			h, _ = l.Handle(resourceID)
		}
		return l.check(h, token), true, nil
	}
	if h != 0 {
		e, gen := &l.sigs[h-1], l.signed.v.gen.Load()
		if (raw == nil && e.hitText(token, text, gen)) || (raw != nil && e.hitRaw(token, raw, gen)) {
			return l.check(h, token), true, nil
		}
	}
	return Decision{}, false, nil
}

// afterVerify decides a valid token once its signature has been checked:
// refused unread when it did not verify, else remembered and compared.
func (l *Ledger) afterVerify(resourceID string, token int64, raw [SignatureSize]byte, text string, gen uint64, ok bool) Decision {
	if !ok {
		hwm, _ := l.HighWater(resourceID)
		return badSignature(token, hwm)
	}
	h, _ := l.Handle(resourceID) // valid: signedFast said so
	l.sigs[h-1].set(token, raw, text, gen)
	return l.check(h, token)
}

// VerifyCache is a Verifier with a guard's memory of verifications, for
// guards that keep their marks elsewhere (a database, the server's own
// record): Verify does the Ed25519 work once per (resource, token,
// signature) and then compares bytes. It is safe for concurrent use.
type VerifyCache struct {
	mu sync.Mutex
	s  *signedMode
}

// NewVerifyCache returns an empty cache over v's keys.
func NewVerifyCache(v *Verifier) *VerifyCache {
	s := newSignedMode(v)
	s.cache = make(map[string]verified)
	return &VerifyCache{s: s}
}

// Verifier returns the keys the cache checks against.
func (c *VerifyCache) Verifier() *Verifier { return c.s.v }

// Verify reports whether sig (text) is a trusted key's signature of token
// on resourceID, remembering a yes.
func (c *VerifyCache) Verify(resourceID string, token int64, sig string) bool {
	if validate(resourceID, token) != nil {
		return false
	}
	c.mu.Lock()
	hit := c.s.cachedText(resourceID, token, sig)
	c.mu.Unlock()
	if hit {
		return true
	}
	raw, gen, ok := c.s.verifyText(resourceID, token, sig)
	if ok {
		c.mu.Lock()
		c.s.remember(resourceID, token, raw, sig, gen)
		c.mu.Unlock()
	}
	return ok
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
