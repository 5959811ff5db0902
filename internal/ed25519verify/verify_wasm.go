//go:build wasm

package ed25519verify

func (k *PublicKey) prepare() { k.prepareTable() }

// Verify reports whether sig is a valid signature of message by k. Like
// crypto/ed25519.Verify, it returns false for a signature of the wrong
// length.
func (k *PublicKey) Verify(message, sig []byte) bool { return k.verifyTable(message, sig) }
