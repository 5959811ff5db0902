package client

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/fenceview/fenceview/guard"
)

// Headers a token travels in to a fenced HTTP service (httpguard).
const (
	HeaderToken     = "X-Fencing-Token"
	HeaderSignature = "X-Fencing-Signature"
	HeaderResource  = "X-Resource-Id"
)

// Token is a fencing token as its holder presents it: the number, and from
// a server that signs, the issuer's signature of
// "fenceview/v1 <resource> <number>" and the id of the key that made it.
// The zero Token means "not held".
//
// It prints as the headers that carry it, ready for a request or a curl
// command line:
//
//	X-Fencing-Token: 1847
//	X-Fencing-Signature: 3q2-7w...
type Token struct {
	Resource  string
	Number    int64
	Signature string // "" from a server that does not sign
	KeyID     string
}

// IsZero reports whether t is no token.
func (t Token) IsZero() bool { return t.Number == 0 }

// String is the header lines that carry t ("" for the zero Token).
func (t Token) String() string {
	if t.IsZero() {
		return ""
	}
	s := HeaderToken + ": " + strconv.FormatInt(t.Number, 10)
	if t.Signature != "" {
		s += "\n" + HeaderSignature + ": " + t.Signature
	}
	return s
}

// SetHeader puts t on h: X-Fencing-Token, X-Resource-Id and, when signed,
// X-Fencing-Signature, as httpguard.Middleware reads them.
func (t Token) SetHeader(h http.Header) {
	h.Set(HeaderToken, strconv.FormatInt(t.Number, 10))
	h.Set(HeaderResource, t.Resource)
	if t.Signature != "" {
		h.Set(HeaderSignature, t.Signature)
	} else {
		h.Del(HeaderSignature)
	}
}

// Header returns the headers that carry t.
func (t Token) Header() http.Header {
	h := http.Header{}
	t.SetHeader(h)
	return h
}

// Verify reports whether t's signature is one of v's keys' for t's resource
// and number: what a guard in signed mode will decide about it.
func (t Token) Verify(v *guard.Verifier) bool {
	return v.VerifyText(t.Resource, t.Number, t.Signature)
}

// Token returns the token of the latest grant of the current hold, with its
// signature; the zero Token when the lock is not held by this Mutex. With
// re-entrant grants that is the innermost one: keep the token Lock returned
// at the outermost level.
func (m *Mutex) Token() Token {
	f := m.Fencing()
	if f.Token == 0 {
		return Token{}
	}
	return Token{Resource: m.resource, Number: f.Token, Signature: f.Signature, KeyID: f.KeyID}
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
	var b struct {
		Issuer string `json:"issuer"`
		Keys   []struct {
			KeyID     string    `json:"keyId"`
			Alg       string    `json:"alg"`
			PublicKey string    `json:"publicKey"`
			CreatedAt time.Time `json:"createdAt"`
			Active    bool      `json:"active"`
		} `json:"keys"`
	}
	u := &url.URL{Scheme: c.base.Scheme, Host: c.base.Host, Path: c.base.Path + "/v1/signing-keys"}
	if err := c.call(ctx, http.MethodGet, u, nil, nil, &b, nil); err != nil {
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
		keys = append(keys, SigningKey{KeyID: k.KeyID, Alg: k.Alg, PublicKey: pub, CreatedAt: k.CreatedAt, Active: k.Active})
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
