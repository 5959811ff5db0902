// Package signing holds a fenceview issuer's Ed25519 signing keys: it signs
// every grant, publishes the public keys, rotates and removes keys, and
// verifies tokens presented back to the server.
//
// One key is active and signs new grants; older keys keep verifying until an
// admin removes them, so a rotation never invalidates grants in use. Keys
// live in a Store (the server's SQLite file; the cluster's store in cluster
// mode) or come from a PEM file (--signing-key), in which case they are
// fixed for the life of the process.
//
// Private keys leave this package only to the Store. Nothing here logs,
// prints or formats them: Key's String and its JSON form show the public
// half only.
package signing

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
)

// Alg is the only signature algorithm, as /v1/signing-keys names it.
const Alg = "Ed25519"

// Key is one signing key.
type Key struct {
	ID        string // KeyID of the public key
	Public    ed25519.PublicKey
	private   ed25519.PrivateKey // nil for a key only known by its public half
	CreatedAt time.Time
	Active    bool // signs new grants; exactly one key is active
}

// NewKey returns a key record for a stored key pair (used by Stores).
func NewKey(private ed25519.PrivateKey, createdAt time.Time, active bool) (Key, error) {
	if len(private) != ed25519.PrivateKeySize {
		return Key{}, errors.New("signing: not an Ed25519 private key")
	}
	pub := private.Public().(ed25519.PublicKey)
	return Key{ID: KeyID(pub), Public: pub, private: private, CreatedAt: createdAt, Active: active}, nil
}

// Private returns the private key, for a Store to keep. Nobody else needs it.
func (k Key) Private() ed25519.PrivateKey { return k.private }

// String shows the key id only, so a key that ends up in a log or an error
// message never carries its private half.
func (k Key) String() string { return "signing key " + k.ID }

// GoString is String, for %#v.
func (k Key) GoString() string { return k.String() }

// KeyID names a public key: the base64url (no padding) of the first 12
// bytes of its SHA-256. Anyone holding the public key computes the same id.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return guard.EncodePublicKey(sum[:12])
}

// Store keeps signing keys durably.
type Store interface {
	// SigningKeys returns every stored key.
	SigningKeys(ctx context.Context) ([]Key, error)
	// AddSigningKey stores k as the active key and every other key as
	// inactive, in one transaction.
	AddSigningKey(ctx context.Context, k Key) error
	// RemoveSigningKey deletes the key with id; a missing one is not an error.
	RemoveSigningKey(ctx context.Context, id string) error
}

// Keyring is an issuer's signing keys. It is safe for concurrent use.
type Keyring struct {
	store Store // nil for keys from a file: they cannot change
	now   func() time.Time

	mu       sync.RWMutex
	keys     []Key // newest first
	active   Key
	verifier *guard.Verifier // the public keys, for the server's own checks
}

// Open loads the keys of store, creating (and storing) the first one when
// there is none.
func Open(ctx context.Context, store Store, now func() time.Time) (*Keyring, error) {
	if now == nil {
		now = time.Now
	}
	k := &Keyring{store: store, now: now, verifier: &guard.Verifier{}}
	keys, err := store.SigningKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("signing: loading keys: %w", err)
	}
	if len(keys) == 0 {
		return k, k.rotate(ctx)
	}
	return k, k.set(keys)
}

// FromFile returns a keyring whose only key is the Ed25519 private key in
// path (PEM "PRIVATE KEY", PKCS #8, as `openssl genpkey -algorithm ed25519`
// writes it). Rotate and Remove are refused: change the file instead.
func FromFile(path string) (*Keyring, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	priv, err := parsePrivateKeyPEM(b)
	if err != nil {
		return nil, fmt.Errorf("signing: %s: %w", path, err)
	}
	key, _ := NewKey(priv, time.Time{}, true)
	if fi, err := os.Stat(path); err == nil {
		key.CreatedAt = fi.ModTime().UTC()
	}
	k := &Keyring{now: time.Now, verifier: &guard.Verifier{}}
	return k, k.set([]Key{key})
}

// parsePrivateKeyPEM reads one PEM "PRIVATE KEY" block holding an Ed25519
// key in PKCS #8.
func parsePrivateKeyPEM(b []byte) (ed25519.PrivateKey, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, errors.New(`no PEM "PRIVATE KEY" block`)
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, errors.New("not a PKCS #8 private key")
	}
	priv, ok := parsed.(ed25519.PrivateKey)
	if !ok {
		return nil, errors.New("not an Ed25519 key")
	}
	return priv, nil
}

// MarshalPrivateKeyPEM writes priv as FromFile reads it.
func MarshalPrivateKeyPEM(priv ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// set installs keys (newest first after sorting) and their verifier.
func (k *Keyring) set(keys []Key) error {
	keys = slices.Clone(keys)
	slices.SortStableFunc(keys, func(a, b Key) int { return b.CreatedAt.Compare(a.CreatedAt) })
	var active *Key
	pubs := make([]ed25519.PublicKey, 0, len(keys))
	for i := range keys {
		if keys[i].Active && keys[i].private != nil && active == nil {
			active = &keys[i]
		}
		pubs = append(pubs, keys[i].Public)
	}
	if active == nil {
		return errors.New("signing: no active key with its private half")
	}
	if err := k.verifier.SetKeys(pubs); err != nil {
		return fmt.Errorf("signing: %w (remove old keys)", err)
	}
	for i := range keys {
		keys[i].Active = &keys[i] == active
	}
	k.keys, k.active = keys, *active
	return nil
}

// Sign returns the active key's id and its signature carrier of token on
// resourceID, for a shared grant or an exclusive one, as a grant's fencing
// envelope carries them: a batch of one (guard.SignGrants), so that every
// grant has the same carrier whatever the load, and a guard that cannot
// read batch carriers fails at once rather than under load.
func (k *Keyring) Sign(resourceID string, token int64, shared bool) (keyID, signature string, err error) {
	keyID, sigs, err := k.SignBatch([]string{resourceID}, []int64{token}, []bool{shared})
	if err != nil {
		return keyID, "", err
	}
	return keyID, sigs[0], nil
}

// SignBatch signs tokens[i] on resourceIDs[i] with the active key as one
// batch (guard.SignGrants: one Ed25519 signature over the batch's size and
// Merkle root, and each grant's inclusion proof): what a group commit's
// grants take. shared[i] marks a shared grant; nil, none.
func (k *Keyring) SignBatch(resourceIDs []string, tokens []int64, shared []bool) (keyID string, signatures []string, err error) {
	k.mu.RLock()
	active := k.active
	k.mu.RUnlock()
	sigs, err := guard.SignGrants(active.private, resourceIDs, tokens, shared)
	return active.ID, sigs, err
}

// Verifier returns the trusted public keys, kept current through rotations
// and removals: the server's own fence and its reports check with it.
func (k *Keyring) Verifier() *guard.Verifier { return k.verifier }

// Keys returns every key, newest first, without private halves.
func (k *Keyring) Keys() []Key {
	k.mu.RLock()
	defer k.mu.RUnlock()
	out := make([]Key, len(k.keys))
	for i, key := range k.keys {
		key.private = nil
		out[i] = key
	}
	return out
}

var errFixed = fenceview.Errorf(fenceview.ECONFLICT, "signing keys come from --signing-key and cannot change while the server runs; replace the file instead")

// MaxKeys bounds the keys one issuer keeps: every guard tries a signature
// against each key it trusts, so the list must stay short. Remove old keys
// once their grants are gone.
const MaxKeys = guard.MaxTrustedKeys

// Rotate creates a new key, stores it and makes it the active one: new
// grants are signed by it, older keys keep verifying until removed. It
// returns the new key without its private half.
func (k *Keyring) Rotate(ctx context.Context) (Key, error) {
	if k.store == nil {
		return Key{}, errFixed
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.keys) >= MaxKeys {
		return Key{}, fenceview.Errorf(fenceview.ECONFLICT, "already %d signing keys; remove an old one first", MaxKeys)
	}
	if err := k.rotate(ctx); err != nil {
		return Key{}, err
	}
	key := k.active
	key.private = nil
	return key, nil
}

func (k *Keyring) rotate(ctx context.Context) error {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	// Millisecond times, as the store and the API keep them; never equal to
	// the previous key's, so newest-first stays a total order.
	created := k.now().UTC().Truncate(time.Millisecond)
	if len(k.keys) > 0 && !created.After(k.keys[0].CreatedAt) {
		created = k.keys[0].CreatedAt.Add(time.Millisecond)
	}
	key, _ := NewKey(priv, created, true)
	if err := k.store.AddSigningKey(ctx, key); err != nil {
		return fmt.Errorf("signing: storing a new key: %w", err)
	}
	keys := append([]Key{key}, k.keys...)
	for i := 1; i < len(keys); i++ {
		keys[i].Active = false
	}
	return k.set(keys)
}

// Remove deletes the key with id: grants it signed stop verifying at once,
// at the server and at every guard that refreshes its keys. The active key
// cannot be removed (rotate first).
func (k *Keyring) Remove(ctx context.Context, id string) error {
	if k.store == nil {
		return errFixed
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	i := slices.IndexFunc(k.keys, func(key Key) bool { return key.ID == id })
	if i < 0 {
		return fenceview.Errorf(fenceview.ENOTFOUND, "no signing key %q", id)
	}
	if k.keys[i].Active {
		return fenceview.Errorf(fenceview.ECONFLICT, "signing key %q is the active one; rotate first", id)
	}
	if err := k.store.RemoveSigningKey(ctx, id); err != nil {
		return fmt.Errorf("signing: removing a key: %w", err)
	}
	return k.set(slices.Delete(slices.Clone(k.keys), i, i+1))
}

// EncodePublicKey is the text form of a public key, as /v1/signing-keys
// publishes it: base64url without padding of its 32 bytes.
func EncodePublicKey(pub ed25519.PublicKey) string { return guard.EncodePublicKey(pub) }
