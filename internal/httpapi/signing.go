package httpapi

import (
	"context"
	"net/http"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/httpguard"
	"github.com/fenceview/fenceview/internal/signing"
	"github.com/fenceview/fenceview/internal/wire"
)

// maxSignatureLen bounds a signature field: the longest carrier, a batch
// carrier with a 32-hash audit path (a grant of a batch of 64 carries 354).
const maxSignatureLen = guard.MaxCarrierTextSize

var errTwoSignatures = fenceview.FieldErrorf(fenceview.EINVALID, httpguard.HeaderSignature, "more than one "+httpguard.HeaderSignature+" header")

// SigningKeys is what the API needs of the issuer's keys (*signing.Keyring).
type SigningKeys interface {
	Keys() []signing.Key
	Rotate(ctx context.Context) (signing.Key, error)
	Remove(ctx context.Context, id string) error
}

func signingKeyWire(k signing.Key) wire.SigningKey {
	return wire.SigningKey{KeyID: k.ID, Alg: signing.Alg, PublicKey: signing.EncodePublicKey(k.Public),
		CreatedAt: wire.Time(k.CreatedAt), Active: k.Active}
}

var errNoSigning = fenceview.Errorf(fenceview.ENOTFOUND, "this server does not sign tokens")

// handleSigningKeys lists the public keys (public: guards fetch them).
func (s *Server) handleSigningKeys(w http.ResponseWriter, r *http.Request) (any, error) {
	if s.SigningKeys == nil {
		return nil, errNoSigning
	}
	keys := s.SigningKeys.Keys()
	out := make([]wire.SigningKey, 0, len(keys))
	for _, k := range keys {
		out = append(out, signingKeyWire(k))
	}
	return wire.SigningKeys{Issuer: s.Service.Issuer(), Keys: out}, nil
}

// signingAdmin checks an admin call on the signing keys: the caller manages
// the server, and the server signs.
func (s *Server) signingAdmin(r *http.Request) error {
	if err := s.requireAdmin(r); err != nil {
		return err
	}
	if s.SigningKeys == nil {
		return errNoSigning
	}
	return nil
}

// handleRotateSigningKey creates a new active key (admin).
func (s *Server) handleRotateSigningKey(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := s.signingAdmin(r); err != nil {
		return nil, err
	}
	k, err := s.SigningKeys.Rotate(r.Context())
	if err != nil {
		return nil, err
	}
	s.Logger.Info("signing key rotated", "keyId", k.ID)
	return created(signingKeyWire(k)), nil
}

// handleRemoveSigningKey removes an inactive key (admin): its grants stop
// verifying.
func (s *Server) handleRemoveSigningKey(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := s.signingAdmin(r); err != nil {
		return nil, err
	}
	id := r.PathValue("keyId")
	if len(id) > 64 {
		return nil, fenceview.Errorf(fenceview.EINVALID, "key id over 64 bytes")
	}
	if err := s.SigningKeys.Remove(r.Context(), id); err != nil {
		return nil, err
	}
	s.Logger.Info("signing key removed", "keyId", id)
	return wire.SigningKeyRemoved{KeyID: id, Removed: true}, nil
}

// signature is the fence request's signature: the header, the body, or
// both when they agree.
func (req fenceRequest) signature() (string, error) {
	sig := req.Signature
	if req.sigHeader != nil {
		if sig != "" && sig != *req.sigHeader {
			return "", fenceview.Errorf(fenceview.EINVALID, httpguard.HeaderSignature+" header and body signature differ")
		}
		sig = *req.sigHeader
	}
	if len(sig) > maxSignatureLen {
		return "", fenceview.FieldErrorf(fenceview.EINVALID, "signature", "signature over %d bytes", maxSignatureLen)
	}
	return sig, nil
}
