package core

import (
	"encoding/binary"
	"strconv"

	"github.com/fenceview/fenceview/internal/ed25519verify"
)

// Sizes of the signed-token format (contract v2, "Signed tokens"), raw.
// The text forms (base64url) are decoded by the callers: package
// encoding/base64 alone costs the WebAssembly guard 16 KB.
const (
	PublicKeySize = 32
	SignatureSize = 64
)

// MaxTrustedKeys bounds the keys one ledger trusts: a signature is tried
// against each, so it also bounds the work one forged token causes.
const MaxTrustedKeys = 16

// messagePrefix starts every signed message.
const messagePrefix = "fenceview/v1 "

// AppendMessage appends the bytes an issuer signs for token on resourceID:
// "fenceview/v1 <resourceId> <token>", one space each, the token in decimal.
func AppendMessage(dst []byte, resourceID string, token int64) []byte {
	dst = append(dst, messagePrefix...)
	dst = append(dst, resourceID...)
	dst = append(dst, ' ')
	return strconv.AppendInt(dst, token, 10)
}

// signedMode is what a ledger in signed mode adds: the keys it trusts and
// the verifications it remembers, one per resource (the last token
// verified there, by handle), so its holder's repeated writes under one
// grant cost a comparison of bytes. Like the marks, it grows with the
// resources and no further.
type signedMode struct {
	keys     [][PublicKeySize]byte
	verified []verified // verified[h-1]; shorter when recent handles have none
}

// verified is a (token, signature) that a trusted key made for the
// resource of its handle; token 0 means none.
type verified struct {
	token int64
	sig   [SignatureSize]byte
}

// Trust puts the ledger in signed mode (if it was not) and trusts key, a
// raw 32-byte Ed25519 public key. Trusting a key twice is a no-op. Keys are
// not checked further: a key that is not a curve point verifies nothing.
func (l *Ledger) Trust(key []byte) error {
	if len(key) != PublicKeySize {
		return ErrInvalidPublicKey
	}
	var k [PublicKeySize]byte
	copy(k[:], key)
	if l.signed == nil {
		l.signed = &signedMode{}
	}
	for _, old := range l.signed.keys {
		if old == k {
			return nil
		}
	}
	if len(l.signed.keys) >= MaxTrustedKeys {
		return ErrTooManyKeys
	}
	l.signed.keys = append(l.signed.keys, k)
	return nil
}

// CheckSigned presents a token with its raw signature (64 bytes; any other
// length is a bad signature). In signed mode the signature must be a
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
	if len(sig) != SignatureSize {
		return l.badSignature(h)
	}
	v := l.signed.verified
	if h == 0 || int(h) > len(v) || v[h-1].token != token || !sameSignature(&v[h-1].sig, sig) {
		raw := [SignatureSize]byte(sig)
		if !l.verify(resourceID, token, raw[:]) {
			return l.badSignature(h)
		}
		if h == 0 {
			h, _ = l.Handle(resourceID) // valid: the caller said so
		}
		for len(l.signed.verified) < int(h) {
			l.signed.verified = append(l.signed.verified, verified{})
		}
		l.signed.verified[h-1] = verified{token: token, sig: raw}
	}
	return l.apply(h, token)
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

// verify does the Ed25519 work: is sig a trusted key's signature of token
// on resourceID?
func (l *Ledger) verify(resourceID string, token int64, sig []byte) bool {
	var buf [256]byte // 13 + 160 + 1 + 19 bytes at most: no allocation
	msg := AppendMessage(buf[:0], resourceID, token)
	for i := range l.signed.keys {
		if ed25519verify.Verify(l.signed.keys[i][:], msg, sig) {
			return true
		}
	}
	return false
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
