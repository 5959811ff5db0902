package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Stored is a key as a Store keeps it: the hash of its secret, never the
// secret.
type Stored struct {
	Key
	Hash [sha256.Size]byte
}

// Store keeps keys durably (sqlite.DB implements it).
type Store interface {
	InsertKey(ctx context.Context, k Stored) error
	// DeleteKey removes a key; false when there was none with that id.
	DeleteKey(ctx context.Context, id string) (bool, error)
	Keys(ctx context.Context) ([]Stored, error)
}

// Errors of the keyring. The HTTP layer maps ErrUnauthenticated to 401,
// ErrInvalid to 400 and ErrNotFound to 404.
var (
	ErrUnauthenticated = errors.New("missing, unknown or revoked credential")
	ErrNotFound        = errors.New("no such key")
	ErrInvalid         = errors.New("invalid key request")
)

// Limits on what a key carries.
const (
	MaxNameLen     = 80
	MaxPrefixes    = 32
	MaxPrefixLen   = 160 // a resource id's own limit
	MaxKeys        = 10000
	secretBytes    = 32
	idBytes        = 8
	secretPrefix   = "fv_"
	encodedIDLen   = 2 * idBytes
	encodedSecret  = len(secretPrefix) + encodedIDLen + 1 + 43 // base64url of 32 bytes, no padding
	adminPrincipal = "admin"
)

// Keyring checks credentials against the admin token and the stored keys.
// Its methods are safe for concurrent use.
type Keyring struct {
	store Store
	now   func() time.Time
	// admin is the admin token's hash and principal; nil: no admin token,
	// auth is off. SetAdminToken replaces it whole.
	admin atomic.Pointer[adminCredential]

	mu   sync.RWMutex
	keys map[string]*entry
	gen  uint64 // counts local changes, so Reload never undoes one it did not see
}

type entry struct {
	Stored
	principal *Principal
	revoked   chan struct{}
}

// NewKeyring loads the keys of store. With an empty adminToken auth is off:
// Enabled is false and keys cannot be used (they are still kept).
func NewKeyring(ctx context.Context, store Store, adminToken string, now func() time.Time) (*Keyring, error) {
	if now == nil {
		now = time.Now
	}
	k := &Keyring{store: store, now: now, keys: map[string]*entry{}}
	if adminToken != "" {
		k.admin.Store(newAdminCredential(adminToken))
	}
	if store != nil {
		all, err := store.Keys(ctx)
		if err != nil {
			return nil, fmt.Errorf("loading keys: %w", err)
		}
		for _, s := range all {
			k.keys[s.ID] = newEntry(s)
		}
	}
	return k, nil
}

func newEntry(s Stored) *entry {
	e := &entry{Stored: s, revoked: make(chan struct{})}
	e.principal = &Principal{KeyID: s.ID, Name: s.Name, Role: s.Role, Resources: s.Resources, revoked: e.revoked, keyTag: "key:" + s.ID}
	return e
}

// Enabled reports whether auth is on (an admin token is set).
func (k *Keyring) Enabled() bool { return k != nil && k.admin.Load() != nil }

// adminCredential is one admin token: its principal's Revoked closes when
// the token is replaced.
type adminCredential struct {
	hash      [sha256.Size]byte
	principal *Principal
	revoked   chan struct{}
}

func newAdminCredential(token string) *adminCredential {
	c := &adminCredential{hash: sha256.Sum256([]byte(token)), revoked: make(chan struct{})}
	c.principal = &Principal{KeyID: adminPrincipal, Name: "admin token", Role: Admin, revoked: c.revoked}
	return c
}

// SetAdminToken replaces the admin token without a restart: from its
// return the old token authenticates nothing, and the streams and
// sessions opened with it see Revoked closed, as for a revoked key. The
// same token again changes nothing. Auth cannot be turned off this way:
// an empty token is refused, as is one on a keyring made without one.
func (k *Keyring) SetAdminToken(token string) error {
	if token == "" {
		return fmt.Errorf("%w: an empty admin token would turn auth off; restart without one for that", ErrInvalid)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	old := k.admin.Load()
	if old == nil {
		return fmt.Errorf("%w: auth is off; restart with an admin token to turn it on", ErrInvalid)
	}
	next := newAdminCredential(token)
	if next.hash == old.hash {
		return nil
	}
	k.admin.Store(next)
	close(old.revoked)
	return nil
}

// Authenticate returns the principal of a secret: the admin token or a
// key's secret. Unknown or revoked: ErrUnauthenticated.
func (k *Keyring) Authenticate(secret string) (*Principal, error) {
	if !k.Enabled() || secret == "" {
		return nil, ErrUnauthenticated
	}
	admin := k.admin.Load() // never nil again once set
	// A key's secret is 64 bytes: copied into a buffer on the stack, not
	// the heap ([]byte(secret) is on the stack only up to 32).
	var buf [128]byte
	h := sha256.Sum256(append(buf[:0], secret...))
	if id, ok := keyIDOf(secret); ok {
		k.mu.RLock()
		e := k.keys[id]
		k.mu.RUnlock()
		if e != nil && subtle.ConstantTimeCompare(h[:], e.Hash[:]) == 1 {
			return e.principal, nil
		}
		return nil, ErrUnauthenticated
	}
	// Both sides are hashes, so the comparison's time says nothing about
	// the token's length either.
	if subtle.ConstantTimeCompare(h[:], admin.hash[:]) == 1 {
		return admin.principal, nil
	}
	return nil, ErrUnauthenticated
}

// Principal returns the principal of a key id ("admin" for the admin
// token), for sessions that remember who logged in.
func (k *Keyring) Principal(id string) (*Principal, error) {
	admin := k.admin.Load()
	if admin == nil {
		return nil, ErrUnauthenticated
	}
	if id == adminPrincipal {
		return admin.principal, nil
	}
	k.mu.RLock()
	e := k.keys[id]
	k.mu.RUnlock()
	if e == nil {
		return nil, ErrUnauthenticated
	}
	return e.principal, nil
}

// keyIDOf reads the id out of a key secret: fv_<16 hex>_<43 base64url>.
func keyIDOf(secret string) (string, bool) {
	if len(secret) != encodedSecret || !strings.HasPrefix(secret, secretPrefix) || secret[len(secretPrefix)+encodedIDLen] != '_' {
		return "", false
	}
	id := secret[len(secretPrefix) : len(secretPrefix)+encodedIDLen]
	for i := 0; i < len(id); i++ { // hex, checked without decoding: this runs on every request
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return "", false
		}
	}
	return id, true
}

// Create makes a key and returns it with its secret, which is shown once
// and kept nowhere.
func (k *Keyring) Create(ctx context.Context, name string, role Role, resources []string) (Key, string, error) {
	if k.store == nil {
		return Key{}, "", fmt.Errorf("%w: this server keeps no keys", ErrInvalid)
	}
	if err := validate(name, role, resources); err != nil {
		return Key{}, "", err
	}
	k.mu.RLock()
	n := len(k.keys)
	k.mu.RUnlock()
	if n >= MaxKeys {
		return Key{}, "", fmt.Errorf("%w: at most %d keys; revoke some first", ErrInvalid, MaxKeys)
	}
	var idb [idBytes]byte
	var sec [secretBytes]byte
	rand.Read(idb[:]) // never fails (crypto/rand since Go 1.24)
	rand.Read(sec[:])
	id := hex.EncodeToString(idb[:])
	secret := secretPrefix + id + "_" + base64.RawURLEncoding.EncodeToString(sec[:])
	s := Stored{
		Key:  Key{ID: id, Name: name, Role: role, Resources: append([]string(nil), resources...), CreatedAt: k.now().UTC().Truncate(time.Millisecond)},
		Hash: sha256.Sum256([]byte(secret)),
	}
	if err := k.store.InsertKey(ctx, s); err != nil {
		return Key{}, "", err
	}
	k.mu.Lock()
	k.keys[id] = newEntry(s)
	k.gen++
	k.mu.Unlock()
	return s.Key, secret, nil
}

func validate(name string, role Role, resources []string) error {
	if name == "" || len(name) > MaxNameLen || !utf8.ValidString(name) || hasControl(name) {
		return fmt.Errorf("%w: name: 1..%d bytes of UTF-8, no control characters", ErrInvalid, MaxNameLen)
	}
	if _, ok := ParseRole(string(role)); !ok {
		return fmt.Errorf("%w: role: viewer, client, guard or admin", ErrInvalid)
	}
	if len(resources) > MaxPrefixes {
		return fmt.Errorf("%w: resources: at most %d prefixes", ErrInvalid, MaxPrefixes)
	}
	for _, p := range resources {
		if p == "" || len(p) > MaxPrefixLen || !utf8.ValidString(p) || hasControl(p) {
			return fmt.Errorf("%w: resources: each prefix 1..%d bytes of UTF-8, no control characters", ErrInvalid, MaxPrefixLen)
		}
	}
	return nil
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return true
		}
	}
	return false
}

// List returns every key, oldest first, without secrets.
func (k *Keyring) List() []Key {
	k.mu.RLock()
	out := make([]Key, 0, len(k.keys))
	for _, e := range k.keys {
		out = append(out, e.Key)
	}
	k.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Revoke deletes a key. From the moment it returns the key authenticates
// nothing, and streams opened with it see Revoked closed.
func (k *Keyring) Revoke(ctx context.Context, id string) error {
	k.mu.RLock()
	_, ok := k.keys[id]
	k.mu.RUnlock()
	if !ok {
		return ErrNotFound
	}
	if k.store == nil {
		return ErrNotFound
	}
	if _, err := k.store.DeleteKey(ctx, id); err != nil {
		return err
	}
	k.mu.Lock()
	if e := k.keys[id]; e != nil {
		delete(k.keys, id)
		close(e.revoked)
	}
	k.gen++
	k.mu.Unlock()
	return nil
}

// BearerSecret returns the secret of an Authorization header value of the
// Bearer scheme (the scheme word in any case, RFC 9110 section 11.1).
func BearerSecret(header string) (string, bool) {
	scheme, secret, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	secret = strings.TrimLeft(secret, " ")
	if secret == "" || strings.ContainsAny(secret, " \t") {
		return "", false
	}
	return secret, true
}
