package client

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/wire"
)

// Key is an API key as the server lists it. Secret is set only in the
// answer of CreateKey: the server keeps nothing but its hash.
type Key struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	Resources []string  `json:"resources"`
	CreatedAt time.Time `json:"createdAt"`
	Secret    string    `json:"secret,omitempty"`
}

// CreateKey makes an API key (admin): role is viewer, client, guard or
// admin; resources, when given, limits the key to ids with those prefixes.
func (c *Client) CreateKey(ctx context.Context, name, role string, resources []string) (Key, error) {
	var k wire.Key
	in := wire.KeyRequest{Name: &name, Role: &role, Resources: resources}
	err := c.call(ctx, http.MethodPost, c.path("/v1/auth/keys"), c.adminHeader(), in, &k, refusal{})
	return keyOf(k), err
}

// Keys lists the API keys (admin), without secrets.
func (c *Client) Keys(ctx context.Context) ([]Key, error) {
	var out wire.Keys
	err := c.call(ctx, http.MethodGet, c.path("/v1/auth/keys"), c.adminHeader(), nil, &out, refusal{})
	var keys []Key // nil when the answer had none, empty for []
	if out.Keys != nil {
		keys = make([]Key, 0, len(out.Keys))
	}
	for _, k := range out.Keys {
		keys = append(keys, keyOf(k))
	}
	return keys, err
}

func keyOf(k wire.Key) Key {
	return Key{ID: k.ID, Name: k.Name, Role: k.Role, Resources: k.Resources, CreatedAt: time.Time(k.CreatedAt), Secret: k.Secret}
}

// RevokeKey deletes an API key (admin); it stops working at once, on open
// streams too.
func (c *Client) RevokeKey(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, c.path("/v1/auth/keys/"+id), c.adminHeader(), nil, nil, refusal{})
}

// adminHeader carries the admin token when one is set, else the key.
func (c *Client) adminHeader() http.Header {
	h := http.Header{}
	if c.admin != "" {
		h.Set("Authorization", "Bearer "+c.admin)
	}
	return h
}

// SigningKey is one of an issuer's public signing keys.
type SigningKey struct {
	KeyID     string
	Alg       string // "Ed25519"
	PublicKey ed25519.PublicKey
	CreatedAt time.Time
	Active    bool // signs new grants
}

// maxSigningKeys bounds what SigningKeys accepts from a server.
const maxSigningKeys = guard.MaxTrustedKeys

// SigningKeys returns the server's issuer id and its public signing keys
// (GET /v1/signing-keys). Keys that are not well formed are an error, not
// skipped: a guard must not trust a list it cannot read.
func (c *Client) SigningKeys(ctx context.Context) (issuer string, keys []SigningKey, err error) {
	var b wire.SigningKeys
	u := &url.URL{Scheme: c.base.Scheme, Host: c.base.Host, Path: c.base.Path + "/v1/signing-keys"}
	if err := c.call(ctx, http.MethodGet, u, nil, nil, &b, refusal{}); err != nil {
		return "", nil, err
	}
	if len(b.Keys) > maxSigningKeys {
		return "", nil, fmt.Errorf("fenceview: server lists %d signing keys, more than %d", len(b.Keys), maxSigningKeys)
	}
	for i, k := range b.Keys {
		pub, err := guard.DecodePublicKey(k.PublicKey)
		if err != nil || k.Alg != "Ed25519" {
			return "", nil, fmt.Errorf("fenceview: signing key %d (%q): not an Ed25519 public key", i, k.KeyID)
		}
		keys = append(keys, SigningKey{KeyID: k.KeyID, Alg: k.Alg, PublicKey: pub, CreatedAt: time.Time(k.CreatedAt), Active: k.Active})
	}
	return b.Issuer, keys, nil
}

// Verifier returns a verifier that trusts the server's current signing
// keys, for guards in signed mode (guard.NewSigned, sqlguard Marks.Signed).
// Call RefreshVerifier after a rotation or a removal.
func (c *Client) Verifier(ctx context.Context) (*guard.Verifier, error) {
	v := &guard.Verifier{}
	if err := c.RefreshVerifier(ctx, v); err != nil {
		return nil, err
	}
	return v, nil
}

// RefreshVerifier makes v trust exactly the server's current signing keys:
// new keys are added, removed ones stop verifying (even signatures the
// guards had already verified).
func (c *Client) RefreshVerifier(ctx context.Context, v *guard.Verifier) error {
	_, keys, err := c.SigningKeys(ctx)
	if err != nil {
		return err
	}
	pubs := make([]ed25519.PublicKey, len(keys))
	for i, k := range keys {
		pubs[i] = k.PublicKey
	}
	return v.SetKeys(pubs)
}
