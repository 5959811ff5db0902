package guard

import (
	"bytes"
	"crypto/ed25519"
	"sync"
	"sync/atomic"

	"github.com/fenceview/fenceview/guard/ledger"
	"github.com/fenceview/fenceview/internal/merkle"
)

// MaxTrustedKeys bounds the keys one Verifier trusts. A signature is tried
// against every trusted key (the HTTP carriers do not say which key made
// it), so the bound is also the most work one forged token can cause.
const MaxTrustedKeys = ledger.MaxTrustedKeys

// ErrTooManyKeys is returned by Trust beyond MaxTrustedKeys.
var ErrTooManyKeys = ledger.ErrTooManyKeys

// Verifier holds the Ed25519 public keys of the issuers a guard trusts and
// checks token signatures against them. It is safe for concurrent use and
// may be shared by many guards; Trust and Distrust take effect for all of
// them at once (a key that stops being trusted also stops every cached
// verification it made).
type Verifier struct {
	mu   sync.Mutex                          // serialises Trust and Distrust
	keys atomic.Pointer[[]ed25519.PublicKey] // newest first; never mutated once stored
	// gen grows whenever a key stops being trusted; a cached verification
	// counts only while the generation it was made in is current.
	gen atomic.Uint64

	// roots are the batch roots verified, by key, size, root and
	// signature, so a batch's other grants cost hashing, not an Ed25519
	// verification. A key no longer trusted is not looked up, so its roots
	// stop counting at once.
	rootsMu sync.Mutex
	roots   *merkle.RootCache // made on first use
}

// NewVerifier returns a verifier that trusts keys (each 32 bytes).
func NewVerifier(keys ...ed25519.PublicKey) (*Verifier, error) {
	v := &Verifier{}
	for _, k := range keys {
		if err := v.Trust(k); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// Trust adds key to the trusted keys. Trusting a key twice is a no-op.
func (v *Verifier) Trust(key ed25519.PublicKey) error {
	if len(key) != PublicKeySize {
		return ErrInvalidPublicKey
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	old := v.Keys()
	for _, k := range old {
		if bytes.Equal(k, key) {
			return nil
		}
	}
	if len(old) >= MaxTrustedKeys {
		return ErrTooManyKeys
	}
	// Newest first: the key that signs new grants is tried first.
	next := make([]ed25519.PublicKey, 0, len(old)+1)
	next = append(next, bytes.Clone(key))
	next = append(next, old...)
	v.keys.Store(&next)
	return nil
}

// Distrust removes key; tokens it signed are refused from now on, even by
// guards that had already verified them. It reports whether key was trusted.
func (v *Verifier) Distrust(key ed25519.PublicKey) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	old := v.Keys()
	next := make([]ed25519.PublicKey, 0, len(old))
	for _, k := range old {
		if !bytes.Equal(k, key) {
			next = append(next, k)
		}
	}
	if len(next) == len(old) {
		return false
	}
	v.gen.Add(1) // before the store: a racing cache fill then fails its generation check
	v.keys.Store(&next)
	return true
}

// SetKeys makes keys the whole trusted set (as fetched from an issuer's
// /v1/signing-keys): keys not in it stop being trusted.
func (v *Verifier) SetKeys(keys []ed25519.PublicKey) error {
	if len(keys) > MaxTrustedKeys {
		return ErrTooManyKeys
	}
	next := make([]ed25519.PublicKey, 0, len(keys))
	for _, k := range keys {
		if len(k) != PublicKeySize {
			return ErrInvalidPublicKey
		}
		next = append(next, bytes.Clone(k))
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, k := range v.Keys() {
		if !containsKey(next, k) {
			v.gen.Add(1)
			break
		}
	}
	v.keys.Store(&next)
	return nil
}

func containsKey(keys []ed25519.PublicKey, key ed25519.PublicKey) bool {
	for _, k := range keys {
		if bytes.Equal(k, key) {
			return true
		}
	}
	return false
}

// Generation grows whenever a key stops being trusted (Distrust, SetKeys):
// a guard's remembered verification counts only in the generation it was
// made in (ledger.Verifier).
func (v *Verifier) Generation() uint64 { return v.gen.Load() }

// Keys returns the trusted keys, newest first. The caller must not modify
// them.
func (v *Verifier) Keys() []ed25519.PublicKey {
	if p := v.keys.Load(); p != nil {
		return *p
	}
	return nil
}

// Verify reports whether sig, a raw signature carrier, is a trusted key's
// signature of an exclusive grant of token on resourceID: either 64 bytes
// signing the token's own message, or a batch carrier (SignBatch) whose
// audit path leads from the message to a root a trusted key signed with
// the batch's size. A 64-byte signature always costs the Ed25519 work
// (guards in signed mode cache their answers); a batch's root is verified
// once and remembered (merkle.RootCacheSize roots), so its other grants
// cost a few SHA-256 hashes.
func (v *Verifier) Verify(resourceID string, token int64, sig []byte) bool {
	return v.VerifyGrant(resourceID, token, false, sig)
}

// VerifyShared is Verify for a shared grant: the signature of the message
// "fenceview/v1 <resourceId> <token> shared".
func (v *Verifier) VerifyShared(resourceID string, token int64, sig []byte) bool {
	return v.VerifyGrant(resourceID, token, true, sig)
}

// VerifyGrant is Verify for a shared grant when shared is true, else for
// an exclusive one. A signature verifies for one mode only.
func (v *Verifier) VerifyGrant(resourceID string, token int64, shared bool, sig []byte) bool {
	if !ledger.IsCarrierSize(len(sig)) || ValidateResourceID(resourceID) != nil || ValidateToken(token) != nil {
		return false
	}
	var buf [256]byte // the longest message is 13+160+1+19+7 bytes: no allocation
	msg := AppendGrantMessage(buf[:0], resourceID, token, shared)
	keys := v.Keys()
	if len(sig) == SignatureSize {
		for _, k := range keys {
			if ed25519.Verify(k, msg, sig) {
				return true
			}
		}
		return false
	}
	c, root, ok := merkle.CarrierRoot(sig, msg)
	if !ok {
		return false
	}
	if v.rootRemembered(keys, &c, &root) {
		return true
	}
	var rbuf [merkle.MaxRootMessageSize]byte
	rmsg := merkle.AppendRootMessage(rbuf[:0], c.Size, &root)
	for _, k := range keys {
		if ed25519.Verify(k, rmsg, c.Signature) {
			v.rootsMu.Lock()
			if v.roots == nil {
				v.roots = &merkle.RootCache{}
			}
			v.roots.Add((*[PublicKeySize]byte)(k), c.Size, &root, c.Signature)
			v.rootsMu.Unlock()
			return true
		}
	}
	return false
}

// Mode reports what sig proves about token on resourceID: Exclusive,
// Shared, or Unsigned when no trusted key signed it for either. read says
// which mode to try first (a read's token is usually shared). A batch
// carrier whose root was verified before, in either mode, costs hashing
// only: the first mode tried never costs a failed Ed25519 verification
// then.
func (v *Verifier) Mode(resourceID string, token int64, sig []byte, read bool) Mode {
	if m := v.cachedMode(resourceID, token, sig); m != Unsigned {
		return m
	}
	return ledger.ModeOf(v, resourceID, token, sig, read)
}

// rootRemembered reports whether one of keys was verified to have signed
// the carrier c's root (with c's batch size and signature).
func (v *Verifier) rootRemembered(keys []ed25519.PublicKey, c *merkle.Carrier, root *[merkle.HashSize]byte) bool {
	v.rootsMu.Lock()
	defer v.rootsMu.Unlock()
	for _, k := range keys {
		if v.roots != nil && v.roots.Has((*[PublicKeySize]byte)(k), c.Size, root, c.Signature) {
			return true
		}
	}
	return false
}

// cachedMode is the mode of a batch carrier whose root, for one of the
// two messages, a trusted key was verified to have signed; Unsigned when
// neither root is remembered (or sig is no batch carrier).
func (v *Verifier) cachedMode(resourceID string, token int64, sig []byte) Mode {
	if len(sig) == SignatureSize || !ledger.IsCarrierSize(len(sig)) || ValidateResourceID(resourceID) != nil || ValidateToken(token) != nil {
		return Unsigned
	}
	c, ok := merkle.ParseCarrier(sig)
	if !ok {
		return Unsigned
	}
	keys := v.Keys()
	var buf [256]byte
	for _, mode := range [...]Mode{Exclusive, Shared} {
		root, ok := c.Root(merkle.LeafHash(AppendGrantMessage(buf[:0], resourceID, token, mode == Shared)))
		if !ok {
			return Unsigned // the path does not fit: neither message can verify
		}
		if v.rootRemembered(keys, &c, &root) {
			return mode
		}
	}
	return Unsigned
}

// VerifyText is Verify for the text form of a signature carrier
// (base64url without padding, as it travels in X-Fencing-Signature and
// JSON). A carrier that is not well formed does not verify.
func (v *Verifier) VerifyText(resourceID string, token int64, sig string) bool {
	return v.VerifyTextGrant(resourceID, token, false, sig)
}

// VerifyTextGrant is VerifyGrant for the text form of a signature carrier.
func (v *Verifier) VerifyTextGrant(resourceID string, token int64, shared bool, sig string) bool {
	raw, err := DecodeCarrier(sig)
	return err == nil && v.VerifyGrant(resourceID, token, shared, raw)
}
