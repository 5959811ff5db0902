package ledger

import (
	"encoding/binary"
	"errors"
	"strconv"
	"strings"

	"github.com/fenceview/fenceview/internal/ed25519verify"
	"github.com/fenceview/fenceview/internal/merkle"
)

// Sizes of the signed-token format, raw. A token's signature comes in one
// of two carriers: a signature of its own message (SignatureSize bytes), or
// a batch carrier (a signature over a batch's Merkle root and the token's
// inclusion proof, at most MaxCarrierSize bytes; package internal/merkle).
// The text forms (base64url) are decoded by the callers: package
// encoding/base64 alone costs the WebAssembly guard 16 KB.
const (
	PublicKeySize  = 32
	SignatureSize  = 64
	MaxCarrierSize = merkle.MaxCarrierSize
)

// IsCarrierSize reports whether n bytes can be a signature carrier: 64
// bytes, or a batch carrier's length. Anything else is a bad signature
// without reading it.
func IsCarrierSize(n int) bool { return n == SignatureSize || merkle.IsCarrierSize(n) }

// MaxTrustedKeys bounds the keys one ledger or verifier trusts. A signature
// is tried against every trusted key (the HTTP carriers do not say which
// key made it), so the bound is also the most work one forged token causes.
const MaxTrustedKeys = 16

// MessagePrefix starts every signed message; the version lets the format
// change one day without old signatures meaning something new.
const MessagePrefix = "fenceview/v1 "

// AppendMessage appends the bytes an issuer signs for token on resourceID:
// the UTF-8 of "fenceview/v1 <resourceId> <token>", one space each, the
// token in decimal. Binding the resource stops a signature of resource A
// from passing for B; binding the token stops one of 5 from passing for 6.
func AppendMessage(dst []byte, resourceID string, token int64) []byte {
	dst = append(dst, MessagePrefix...)
	dst = append(dst, resourceID...)
	dst = append(dst, ' ')
	return strconv.AppendInt(dst, token, 10)
}

// Verifier is the set of keys a ledger in signed mode checks signatures
// against, when the keys are not the ledger's own (UseVerifier):
// guard.Verifier, shared by many guards, whose keys may change under them.
type Verifier interface {
	// Verify reports whether sig (a raw carrier: 64 bytes, or a batch
	// carrier) is a trusted key's signature of token on resourceID.
	Verify(resourceID string, token int64, sig []byte) bool
	// Generation grows whenever a key stops being trusted: a remembered
	// verification counts only in the generation it was made in.
	Generation() uint64
}

var errVerifierKeys = errors.New("guard: the ledger's keys are its Verifier's to change")

// keySet is a ledger's own trusted keys (Trust): they are only ever added,
// so its verifications never expire. Each key is prepared once (in
// WebAssembly, a table of its point's multiples that halves the cost of
// every verification).
type keySet struct {
	keys  []*ed25519verify.PublicKey
	raw   [][PublicKeySize]byte // keys[i]'s bytes, what the root cache is keyed by
	roots *merkle.RootCache     // batch roots verified; made on first use
}

func (k *keySet) trust(key []byte) error {
	pub := [PublicKeySize]byte(key)
	for _, old := range k.raw {
		if old == pub {
			return nil
		}
	}
	if len(k.keys) >= MaxTrustedKeys {
		return ErrTooManyKeys
	}
	k.keys = append(k.keys, ed25519verify.NewPublicKey(&pub))
	k.raw = append(k.raw, pub)
	return nil
}

func (k *keySet) verify(resourceID string, token int64, sig []byte) bool {
	var buf [256]byte // 13 + 160 + 1 + 19 bytes at most: no allocation
	msg := AppendMessage(buf[:0], resourceID, token)
	if len(sig) == SignatureSize {
		for i := range k.keys {
			if k.keys[i].Verify(msg, sig) {
				return true
			}
		}
		return false
	}
	c, ok := merkle.ParseCarrier(sig)
	if !ok {
		return false
	}
	root, ok := c.Root(merkle.LeafHash(msg))
	if !ok {
		return false
	}
	if k.roots == nil {
		k.roots = &merkle.RootCache{}
	}
	// Keys are only ever added to a keySet, so a root once verified stays so.
	for i := range k.keys {
		if k.roots.Has(&k.raw[i], &root, c.Signature) {
			return true
		}
	}
	var rbuf [merkle.RootMessageSize]byte
	rmsg := merkle.AppendRootMessage(rbuf[:0], &root)
	for i := range k.keys {
		if k.keys[i].Verify(rmsg, c.Signature) {
			k.roots.Add(&k.raw[i], &root, c.Signature)
			return true
		}
	}
	return false
}

// signedMode is what a ledger in signed mode adds: the keys it trusts and
// the verifications it remembers, one per resource (the last token
// verified there, by handle), so its holder's repeated writes under one
// grant cost a comparison of bytes. Like the marks, it grows with the
// resources and no further.
type signedMode struct {
	shared Verifier // the keys, when they are not the ledger's own (UseVerifier)
	own    keySet   // the keys otherwise (Trust)
	memory []Verification
}

func (s *signedMode) generation() uint64 {
	if s.shared == nil {
		return 0
	}
	return s.shared.Generation()
}

func (s *signedMode) verify(resourceID string, token int64, sig []byte) bool {
	if s.shared == nil {
		return s.own.verify(resourceID, token, sig)
	}
	return s.shared.Verify(resourceID, token, sig)
}

// Verification is a remembered good signature: a (token, signature) that a
// trusted key made for the resource it is kept for, in generation gen of
// the keys. The zero Verification recalls nothing.
type Verification struct {
	token int64
	gen   uint64
	raw   [SignatureSize]byte // the signature, of either carrier
	proof string              // a batch carrier's bytes after its signature; "" for a 64-byte one
	text  string              // the text it was verified from; "" when it came raw
}

// Recalls reports whether v is exactly this token and signature carrier,
// verified in generation gen. The carrier is text when raw is nil, else
// raw. Only canonical text ever verifies, so equal text means equal bytes;
// a verification of raw bytes recalls no text.
func (v *Verification) Recalls(token int64, text string, raw []byte, gen uint64) bool {
	if v.token != token || v.token == 0 || v.gen != gen {
		return false
	}
	if raw == nil {
		return v.text != "" && v.text == text
	}
	if len(raw) == SignatureSize {
		return v.proof == "" && sameSignature(&v.raw, raw)
	}
	// A batch carrier: the version byte, the signature, then the proof.
	return len(raw) > 1+SignatureSize && raw[0] == merkle.Version &&
		sameSignature(&v.raw, raw[1:1+SignatureSize]) && v.proof == string(raw[1+SignatureSize:])
}

// Remember records a verification of raw, a well-formed carrier. raw and
// text are copied: callers (the WebAssembly exports) may pass bytes and
// strings that alias buffers they reuse. The text is kept only when
// given, so a ledger fed raw signatures stores no text.
func (v *Verification) Remember(token int64, raw []byte, text string, gen uint64) {
	if v.Recalls(token, "", raw, gen) && (text == "" || v.text == text) {
		return
	}
	v.token, v.gen, v.text = token, gen, strings.Clone(text)
	if len(raw) == SignatureSize {
		v.raw, v.proof = [SignatureSize]byte(raw), ""
		return
	}
	v.raw, v.proof = [SignatureSize]byte(raw[1:1+SignatureSize]), string(raw[1+SignatureSize:])
}

// sameSignature compares a remembered signature with sig (64 bytes) eight
// bytes at a time: Go's WebAssembly port compares byte arrays one byte per
// loop turn, which made a remembered check cost more than the rule.
func sameSignature(a *[SignatureSize]byte, sig []byte) bool {
	var diff uint64
	for i := 0; i < SignatureSize; i += 8 {
		diff |= binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(sig[i:])
	}
	return diff == 0
}

// Trust puts the ledger in signed mode (if it was not) and trusts key, a
// raw 32-byte Ed25519 public key, in the ledger's own key set: the
// WebAssembly guard's guard_trust_key. Trusting a key twice is a no-op.
// Keys are not checked further: a key that is not a curve point verifies
// nothing. A ledger over a shared Verifier refuses: its keys are changed
// there.
func (l *Ledger) Trust(key []byte) error {
	if len(key) != PublicKeySize {
		return ErrInvalidPublicKey
	}
	if l.signed == nil {
		l.signed = &signedMode{}
	}
	if l.signed.shared != nil {
		return errVerifierKeys
	}
	return l.signed.own.trust(key)
}

// UseVerifier puts the ledger in signed mode over v's keys, forgetting
// any keys and verifications it had.
func (l *Ledger) UseVerifier(v Verifier) {
	l.signed = &signedMode{shared: v}
}

// CheckSigned presents a token with its raw signature carrier (64 bytes, or
// a batch carrier; anything else is a bad signature). In signed mode the signature must be a
// trusted key's for exactly this resource and token, or the token is
// refused with ReasonBadSignature, not compared, and the mark does not
// move; a verified (resource, token, signature) is remembered, so a
// holder's repeated writes cost a comparison of bytes. Outside signed mode
// the signature is ignored (Check). Invalid ids and tokens are errors,
// before any signature is looked at.
func (l *Ledger) CheckSigned(resourceID string, token int64, sig []byte) (Result, error) {
	if l.signed == nil {
		return l.Check(resourceID, token)
	}
	h, err := l.find(resourceID)
	if err != nil {
		return Result{}, err
	}
	if err := ValidateToken(token); err != nil {
		return Result{}, err
	}
	return l.checkSigned(h, resourceID, token, sig), nil
}

// CheckSignedHandle is CheckSigned for the resource h names; the token is
// checked before the handle, as in CheckHandle.
func (l *Ledger) CheckSignedHandle(h Handle, token int64, sig []byte) (Result, error) {
	if err := ValidateToken(token); err != nil {
		return Result{}, err
	}
	if !l.Valid(h) {
		return Result{}, unknownHandle(h)
	}
	if l.signed == nil {
		return l.apply(h, token), nil
	}
	return l.checkSigned(h, l.ids[h-1], token, sig), nil
}

// checkSigned is the signed check of a valid id (h its handle, or 0 when
// it has none yet) and token, in signed mode.
func (l *Ledger) checkSigned(h Handle, resourceID string, token int64, sig []byte) Result {
	if !IsCarrierSize(len(sig)) {
		return l.badSignature(h)
	}
	gen := l.signed.generation()
	if l.recalls(h, token, "", sig, gen) {
		return l.apply(h, token)
	}
	// sig may alias memory the caller reuses; Remember copies it.
	return l.verified(h, resourceID, token, sig, "", gen, l.signed.verify(resourceID, token, sig))
}

// Recall is the part of a signed check that needs no Ed25519, for a caller
// that verifies signatures outside its lock (guard.Guard): it validates the
// input, applies the rule outside signed mode, and in signed mode applies
// it when the resource's remembered verification is exactly this token and
// signature (text, or raw when raw is not nil). done is false when the
// signature must be verified: Verified then finishes the check.
func (l *Ledger) Recall(resourceID string, token int64, text string, raw []byte) (r Result, done bool, err error) {
	h, err := l.find(resourceID) // validates only ids not seen before
	if err != nil {
		return Result{}, true, err
	}
	if err := ValidateToken(token); err != nil {
		return Result{}, true, err
	}
	if l.signed == nil {
		if h == 0 {
			h, _ = l.Handle(resourceID)
		}
		return l.apply(h, token), true, nil
	}
	if l.recalls(h, token, text, raw, l.signed.generation()) {
		return l.apply(h, token), true, nil
	}
	return Result{}, false, nil
}

// Verified finishes a check that Recall left undone, once the caller has
// verified the signature against the ledger's Verifier: ok is the answer,
// raw the carrier's bytes, text its text when it came as text, gen the
// Verifier's generation read before verifying. A signature that did not
// verify is refused unread; one that did is remembered and the token
// compared.
func (l *Ledger) Verified(resourceID string, token int64, raw []byte, text string, gen uint64, ok bool) Result {
	return l.verified(l.index[resourceID], resourceID, token, raw, text, gen, ok)
}

func (l *Ledger) verified(h Handle, resourceID string, token int64, raw []byte, text string, gen uint64, ok bool) Result {
	if !ok {
		return l.badSignature(h)
	}
	if h == 0 {
		h, _ = l.Handle(resourceID) // valid: the caller said so
	}
	for len(l.signed.memory) < int(h) {
		l.signed.memory = append(l.signed.memory, Verification{})
	}
	l.signed.memory[h-1].Remember(token, raw, text, gen)
	return l.apply(h, token)
}

func (l *Ledger) recalls(h Handle, token int64, text string, raw []byte, gen uint64) bool {
	m := l.signed.memory
	return h != 0 && int(h) <= len(m) && m[h-1].Recalls(token, text, raw, gen)
}

// badSignature is the refusal of a token whose signature did not verify:
// Required is the current mark, as for every refusal that is not stale.
func (l *Ledger) badSignature(h Handle) Result {
	var hwm int64
	if h != 0 {
		hwm = l.marks[h-1]
	}
	return Result{Reason: ReasonBadSignature, Required: hwm}
}
