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

// SharedSuffix ends the message of a shared grant, so that a reader's
// signature never verifies as a writer's.
const SharedSuffix = " shared"

// AppendMessage appends the bytes an issuer signs for an exclusive grant of
// token on resourceID: the UTF-8 of "fenceview/v1 <resourceId> <token>",
// one space each, the token in decimal. Binding the resource stops a
// signature of resource A from passing for B; binding the token stops one
// of 5 from passing for 6.
func AppendMessage(dst []byte, resourceID string, token int64) []byte {
	dst = append(dst, MessagePrefix...)
	dst = append(dst, resourceID...)
	dst = append(dst, ' ')
	return strconv.AppendInt(dst, token, 10)
}

// AppendGrantMessage appends the message of a grant in its mode: a shared
// grant's is AppendMessage's followed by SharedSuffix.
func AppendGrantMessage(dst []byte, resourceID string, token int64, shared bool) []byte {
	dst = AppendMessage(dst, resourceID, token)
	if shared {
		dst = append(dst, SharedSuffix...)
	}
	return dst
}

// Mode is what a signature proves about a token: which kind of grant a
// trusted key signed it for, if any.
type Mode uint8

const (
	// Unsigned: no trusted key signed this token for this resource.
	Unsigned Mode = iota
	// Exclusive: the token of a writer's grant.
	Exclusive
	// Shared: the token of a read phase, which many readers hold at once:
	// it may read, never write.
	Shared
)

// Verifier is the set of keys a ledger in signed mode checks signatures
// against, when the keys are not the ledger's own (UseVerifier):
// guard.Verifier, shared by many guards, whose keys may change under them.
type Verifier interface {
	// VerifyGrant reports whether sig (a raw carrier: 64 bytes, or a batch
	// carrier) is a trusted key's signature of token on resourceID, for a
	// shared grant or an exclusive one as shared says.
	VerifyGrant(resourceID string, token int64, shared bool, sig []byte) bool
	// Generation grows whenever a key stops being trusted: a remembered
	// verification counts only in the generation it was made in.
	Generation() uint64
}

// ModeOf is the mode v's keys signed token on resourceID for. A read
// tries the shared message first and a write the exclusive one, so the
// usual case costs one verification.
func ModeOf(v Verifier, resourceID string, token int64, sig []byte, read bool) Mode {
	first, second := Exclusive, Shared
	if read {
		first, second = Shared, Exclusive
	}
	if v.VerifyGrant(resourceID, token, first == Shared, sig) {
		return first
	}
	if v.VerifyGrant(resourceID, token, second == Shared, sig) {
		return second
	}
	return Unsigned
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

func (k *keySet) Generation() uint64 { return 0 }

func (k *keySet) VerifyGrant(resourceID string, token int64, shared bool, sig []byte) bool {
	var buf [256]byte // 13 + 160 + 1 + 19 + 7 bytes at most: no allocation
	msg := AppendGrantMessage(buf[:0], resourceID, token, shared)
	if len(sig) == SignatureSize {
		for i := range k.keys {
			if k.keys[i].Verify(msg, sig) {
				return true
			}
		}
		return false
	}
	c, root, ok := merkle.CarrierRoot(sig, msg)
	if !ok {
		return false
	}
	if k.roots == nil {
		k.roots = &merkle.RootCache{}
	}
	// Keys are only ever added to a keySet, so a root once verified stays so.
	for i := range k.keys {
		if k.roots.Has(&k.raw[i], c.Size, &root, c.Signature) {
			return true
		}
	}
	var rbuf [merkle.MaxRootMessageSize]byte
	rmsg := merkle.AppendRootMessage(rbuf[:0], c.Size, &root)
	for i := range k.keys {
		if k.keys[i].Verify(rmsg, c.Signature) {
			k.roots.Add(&k.raw[i], c.Size, &root, c.Signature)
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

func (s *signedMode) verifier() Verifier {
	if s.shared == nil {
		return &s.own
	}
	return s.shared
}

// Verification is a remembered good signature: a (token, signature) that a
// trusted key made for the resource it is kept for, in generation gen of
// the keys, and the mode it was made for. The zero Verification recalls
// nothing.
type Verification struct {
	token int64
	gen   uint64
	mode  Mode
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

// Mode is the mode the remembered signature was made for.
func (v *Verification) Mode() Mode { return v.mode }

// Remember records a verification of raw, a well-formed carrier that a
// trusted key made for mode (Exclusive or Shared). raw and text are
// copied: callers (the WebAssembly exports) may pass bytes and strings
// that alias buffers they reuse. The text is kept only when given, so a
// ledger fed raw signatures stores no text.
func (v *Verification) Remember(token int64, raw []byte, text string, gen uint64, mode Mode) {
	if v.Recalls(token, "", raw, gen) && (text == "" || v.text == text) {
		return
	}
	v.token, v.gen, v.text, v.mode = token, gen, strings.Clone(text), mode
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

// CheckSigned presents a token for a write with its raw signature carrier
// (64 bytes, or a batch carrier; anything else is a bad signature). In
// signed mode the signature must be a trusted key's for an exclusive
// grant of exactly this resource and token: a shared grant's is refused
// with ReasonSharedToken (readers share their token, so it cannot fence a
// write), anything else with ReasonBadSignature, and neither is compared
// nor moves the mark. A verified (resource, token, signature) is
// remembered, so a holder's repeated writes cost a comparison of bytes.
// Outside signed mode the signature is ignored (Check). Invalid ids and
// tokens are errors, before any signature is looked at.
func (l *Ledger) CheckSigned(resourceID string, token int64, sig []byte) (Result, error) {
	return l.CheckSignedAccess(resourceID, token, sig, false)
}

// CheckSignedAccess is CheckSigned for a read when read is true: a read
// accepts the signature of either grant, shared or exclusive. The rule is
// the same for both: token >= mark, and the mark rises to the token.
func (l *Ledger) CheckSignedAccess(resourceID string, token int64, sig []byte, read bool) (Result, error) {
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
	return l.checkSigned(h, resourceID, token, sig, read), nil
}

// CheckSignedHandle is CheckSigned for the resource h names; the token is
// checked before the handle, as in CheckHandle.
func (l *Ledger) CheckSignedHandle(h Handle, token int64, sig []byte) (Result, error) {
	return l.CheckSignedHandleAccess(h, token, sig, false)
}

// CheckSignedHandleAccess is CheckSignedAccess for the resource h names.
func (l *Ledger) CheckSignedHandleAccess(h Handle, token int64, sig []byte, read bool) (Result, error) {
	if err := ValidateToken(token); err != nil {
		return Result{}, err
	}
	if !l.Valid(h) {
		return Result{}, unknownHandle(h)
	}
	if l.signed == nil {
		return l.apply(h, token), nil
	}
	return l.checkSigned(h, l.ids[h-1], token, sig, read), nil
}

// checkSigned is the signed check of a valid id (h its handle, or 0 when
// it has none yet) and token, in signed mode.
func (l *Ledger) checkSigned(h Handle, resourceID string, token int64, sig []byte, read bool) Result {
	if !IsCarrierSize(len(sig)) {
		return l.badSignature(h)
	}
	gen := l.signed.generation()
	if mode, ok := l.recalls(h, token, "", sig, gen); ok {
		return l.applyMode(h, token, mode, read)
	}
	// sig may alias memory the caller reuses; Remember copies it.
	mode := ModeOf(l.signed.verifier(), resourceID, token, sig, read)
	return l.verified(h, resourceID, token, sig, "", gen, mode, read)
}

// Recall is the part of a signed check that needs no Ed25519, for a caller
// that verifies signatures outside its lock (guard.Guard): it validates the
// input, applies the rule outside signed mode, and in signed mode applies
// it when the resource's remembered verification is exactly this token and
// signature (text, or raw when raw is not nil). done is false when the
// signature must be verified: Verified then finishes the check.
func (l *Ledger) Recall(resourceID string, token int64, text string, raw []byte, read bool) (r Result, done bool, err error) {
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
	if mode, ok := l.recalls(h, token, text, raw, l.signed.generation()); ok {
		return l.applyMode(h, token, mode, read), true, nil
	}
	return Result{}, false, nil
}

// Verified finishes a check that Recall left undone, once the caller has
// verified the signature against the ledger's Verifier (ModeOf): mode is
// the answer, raw the carrier's bytes, text its text when it came as
// text, gen the Verifier's generation read before verifying. A signature
// that did not verify is refused unread; one that did is remembered and
// the token compared, unless it is a shared token presented for a write.
func (l *Ledger) Verified(resourceID string, token int64, raw []byte, text string, gen uint64, mode Mode, read bool) Result {
	return l.verified(l.index[resourceID], resourceID, token, raw, text, gen, mode, read)
}

func (l *Ledger) verified(h Handle, resourceID string, token int64, raw []byte, text string, gen uint64, mode Mode, read bool) Result {
	if mode == Unsigned {
		return l.badSignature(h)
	}
	if h == 0 {
		h, _ = l.Handle(resourceID) // valid: the caller said so
	}
	for len(l.signed.memory) < int(h) {
		l.signed.memory = append(l.signed.memory, Verification{})
	}
	l.signed.memory[h-1].Remember(token, raw, text, gen, mode)
	return l.applyMode(h, token, mode, read)
}

// applyMode applies the rule to a token whose signature proved mode: a
// shared token cannot write.
func (l *Ledger) applyMode(h Handle, token int64, mode Mode, read bool) Result {
	if mode == Shared && !read {
		return Result{Reason: ReasonSharedToken, Required: l.marks[h-1]}
	}
	return l.apply(h, token)
}

func (l *Ledger) recalls(h Handle, token int64, text string, raw []byte, gen uint64) (Mode, bool) {
	m := l.signed.memory
	if h != 0 && int(h) <= len(m) && m[h-1].Recalls(token, text, raw, gen) {
		return m[h-1].mode, true
	}
	return Unsigned, false
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
