package wasm

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/ledger"
)

// ErrInvalidPublicKey is TrustKey's error for a key that is not 32 bytes,
// and ErrTooManyKeys for a 17th key.
var (
	ErrInvalidPublicKey = ledger.ErrInvalidPublicKey
	ErrTooManyKeys      = ledger.ErrTooManyKeys
)

// TrustKey puts the guard in signed mode and trusts key, a raw 32-byte
// Ed25519 public key (as GET /v1/signing-keys publishes it, decoded). From
// then on only CheckSigned can accept a token: Check and CheckHandle refuse
// every token with reason bad-signature, and marks never move for them.
// Every instance trusts the key.
func (g *Guard) TrustKey(key []byte) error {
	if len(key) != ledger.PublicKeySize {
		return ErrInvalidPublicKey
	}
	for _, s := range g.shards {
		if err := s.trust(key); err != nil {
			return err
		}
	}
	return nil
}

func (s *shard) trust(key []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failure != nil {
		return s.failure
	}
	if !s.mem.Write(s.scratch, key) {
		return s.fail(fmt.Errorf("scratch buffer outside memory"))
	}
	s.stack[0], s.stack[1] = uint64(s.scratch), uint64(len(key))
	if err := s.trustKey.CallWithStack(context.Background(), s.stack[:]); err != nil {
		return s.fail(err)
	}
	switch v := int64(s.stack[0]); v {
	case 0:
		return nil
	case CodeInvalidKey:
		return ErrInvalidPublicKey
	case CodeTooManyKeys:
		return ErrTooManyKeys
	default:
		return s.fail(fmt.Errorf("guard_trust_key: code %d", v))
	}
}

// sigText is the text form of signatures: base64url without padding, with
// unused bits zero, so each signature has one text.
var sigText = base64.RawURLEncoding.Strict()

// CheckSigned presents a token with the text of its signature carrier
// (base64url without padding, as in X-Fencing-Signature and grants'
// "signature": 64 bytes, or a batch carrier). Once a key is trusted
// (TrustKey) the carrier must prove a trusted key's signature for exactly
// this resource and token, or the token is refused with reason
// bad-signature and not compared; the guest remembers a verified (resource,
// token, signature), so a holder's repeated writes cost a comparison of
// bytes, not a verification, and a batch's verified root, so its other
// grants cost hashing. Before any key is trusted the signature is ignored.
// Invalid ids and tokens are errors, as for Check.
func (g *Guard) CheckSigned(resourceID string, token int64, sig string) (guard.Decision, error) {
	return g.CheckSignedBytes(resourceID, token, carrierBytes(sig))
}

// CheckSignedRead is CheckSigned for a read (guard_check_signed_read): a
// shared grant's signature will do as well as an exclusive one's. A write
// with a shared grant's token is refused with reason shared-token.
func (g *Guard) CheckSignedRead(resourceID string, token int64, sig string) (guard.Decision, error) {
	return g.CheckSignedBytesRead(resourceID, token, carrierBytes(sig))
}

// carrierBytes decodes the text of a signature carrier, nil when it is
// not one (a bad signature, whatever it is).
func carrierBytes(sig string) []byte {
	var raw []byte
	if n := len(sig) * 6 / 8; len(sig) <= guard.MaxCarrierTextSize && ledger.IsCarrierSize(n) &&
		len(sig) == sigText.EncodedLen(n) && base64URL(sig) {
		if b, err := sigText.DecodeString(sig); err == nil {
			raw = b
		}
	}
	return raw
}

// base64URL reports whether s uses only the base64url alphabet (the
// decoder would skip CR and LF).
func base64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// CheckSignedBytes is CheckSigned with the raw carrier (64 bytes, or a
// batch carrier); any other length is a bad signature.
func (g *Guard) CheckSignedBytes(resourceID string, token int64, sig []byte) (guard.Decision, error) {
	return g.checkSignedBytes(resourceID, token, sig, false)
}

// CheckSignedBytesRead is CheckSignedRead with the raw carrier.
func (g *Guard) CheckSignedBytesRead(resourceID string, token int64, sig []byte) (guard.Decision, error) {
	return g.checkSignedBytes(resourceID, token, sig, true)
}

func (g *Guard) checkSignedBytes(resourceID string, token int64, sig []byte, read bool) (guard.Decision, error) {
	s := g.shardFor(resourceID)
	s.mu.Lock()
	d, err := s.checkSignedCall(resourceID, token, sig, read)
	s.mu.Unlock()
	if err == nil && g.reporter != nil {
		g.reporter.report(resourceID, d, read)
	}
	return d, err
}

// checkSignedCall is guard_check_signed_handle (or its read) with the
// signature in the scratch buffer and the handle from the cache (the guest
// then neither hashes the id nor, for a verification it remembers,
// verifies anything). s.mu is held.
func (s *shard) checkSignedCall(resourceID string, token int64, sig []byte, read bool) (guard.Decision, error) {
	if s.failure != nil {
		return guard.Decision{}, s.failure
	}
	h, err := s.handleOf(resourceID)
	if err != nil {
		return guard.Decision{}, err
	}
	if !ledger.IsCarrierSize(len(sig)) {
		sig = nil // bad whatever it is; the guest need not read it
	}
	if !s.mem.Write(s.scratch+sigOffset, sig) {
		return guard.Decision{}, s.fail(fmt.Errorf("scratch buffer outside memory"))
	}
	s.stack[0], s.stack[1], s.stack[2], s.stack[3] = uint64(h), uint64(token), uint64(s.scratch+sigOffset), uint64(len(sig))
	fn := s.checkSignedHandle
	if read {
		fn = s.checkSignedRead
	}
	err = fn.CallWithStack(context.Background(), s.stack[:])
	return s.decision(int64(s.stack[0]), err, resourceID, token)
}
