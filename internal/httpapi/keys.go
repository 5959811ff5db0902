package httpapi

import (
	"errors"
	"net/http"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/httpapi/request"
	"github.com/fenceview/fenceview/internal/wire"
)

func keyWire(k auth.Key) wire.Key {
	res := k.Resources
	if res == nil {
		res = []string{}
	}
	return wire.Key{ID: k.ID, Name: k.Name, Role: string(k.Role), Resources: res, CreatedAt: wire.Time(k.CreatedAt)}
}

// keysOn is the credential store, or an error when auth is off: keys
// without auth would be decoration.
func (s *Server) keysOn(r *http.Request) (Credentials, error) {
	if err := s.requireAdmin(r); err != nil {
		return nil, err
	}
	c := s.credentials()
	if c == nil || !c.Enabled() {
		return nil, fenceview.Errorf(fenceview.ECONFLICT, "auth is off: start the server with --admin-token to use keys")
	}
	return c, nil
}

func keyError(err error) error {
	switch {
	case errors.Is(err, auth.ErrInvalid):
		return fenceview.Errorf(fenceview.EINVALID, "%v", err)
	case errors.Is(err, auth.ErrNotFound):
		return fenceview.Errorf(fenceview.ENOTFOUND, "no such key")
	}
	return err
}

func (s *Server) handleCreateKey(w http.ResponseWriter, r *http.Request) (any, error) {
	c, err := s.keysOn(r)
	if err != nil {
		return nil, err
	}
	var req wire.KeyRequest
	if err := decode(w, r, &req, request.MaxBody, false); err != nil {
		return nil, err
	}
	if req.Name == nil || req.Role == nil {
		return nil, fenceview.Errorf(fenceview.EINVALID, `fields "name" and "role" are required`)
	}
	k, secret, err := c.Create(r.Context(), *req.Name, auth.Role(*req.Role), req.Resources)
	if err != nil {
		return nil, keyError(err)
	}
	body := keyWire(k)
	body.Secret = secret
	return created(body), nil
}

func (s *Server) handleKeys(w http.ResponseWriter, r *http.Request) (any, error) {
	c, err := s.keysOn(r)
	if err != nil {
		return nil, err
	}
	keys := c.List()
	out := make([]wire.Key, 0, len(keys))
	for _, k := range keys {
		out = append(out, keyWire(k))
	}
	return wire.Keys{Keys: out}, nil
}

func (s *Server) handleRevokeKey(w http.ResponseWriter, r *http.Request) (any, error) {
	c, err := s.keysOn(r)
	if err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	if err := c.Revoke(r.Context(), id); err != nil {
		return nil, keyError(err)
	}
	// The key's RPC operations already past their check finish first
	// (their waits end with the revocation): after this answer, nothing
	// of the key is applied.
	s.ops.drain(id)
	return wire.KeyRevoked{ID: id, Revoked: true}, nil
}
