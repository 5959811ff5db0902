package ledger

// Keys is a set of trusted keys as a Verifier, with the cache of batch
// roots verified under them and nothing else: for a guard that keeps no
// marks, as the http-wasm module (each pooled instance its own memory)
// must not. Keys are only ever added, so its Generation stays 0. The zero
// value trusts nothing; not safe for concurrent use.
type Keys struct {
	set keySet
}

var _ Verifier = (*Keys)(nil)

// Trust adds key, a raw 32-byte Ed25519 public key (at most MaxTrustedKeys;
// trusting one twice is a no-op).
func (k *Keys) Trust(key []byte) error {
	if len(key) != PublicKeySize {
		return ErrInvalidPublicKey
	}
	return k.set.trust(key)
}

// Len is the number of keys trusted.
func (k *Keys) Len() int { return len(k.set.keys) }

// VerifyGrant reports whether sig (a raw carrier) is a trusted key's
// signature of token on resourceID, for a shared grant or an exclusive one
// as shared says.
func (k *Keys) VerifyGrant(resourceID string, token int64, shared bool, sig []byte) bool {
	return k.set.VerifyGrant(resourceID, token, shared, sig)
}

// Generation is always 0: no key stops being trusted.
func (k *Keys) Generation() uint64 { return 0 }
