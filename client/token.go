package client

import (
	"net/http"
	"strconv"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/httpguard"
)

// Headers a token travels in to a fenced HTTP service (httpguard).
const (
	HeaderToken     = httpguard.HeaderToken
	HeaderSignature = httpguard.HeaderSignature
	HeaderResource  = httpguard.HeaderResource
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
	// Shared: a read phase's token (RWMutex.RLock's), signed as
	// "fenceview/v1 <resource> <number> shared": it reads, never writes.
	Shared bool
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
	return v.VerifyTextGrant(t.Resource, t.Number, t.Shared, t.Signature)
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
	return Token{Resource: m.resource, Number: f.Token, Signature: f.Signature, KeyID: f.KeyID, Shared: f.Shared}
}

// SignedToken is t as a guard built from the client takes it (sqlguard
// Table.UpdateToken, redisguard Guard.WriteToken).
func (t Token) SignedToken() (resourceID string, token int64, signature string) {
	return t.Resource, t.Number, t.Signature
}

var (
	_ guard.SignedToken = Token{}
	_ guard.KeySource   = (*Client)(nil)
)
