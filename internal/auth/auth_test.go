package auth

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// clockedKeyring is a keyring in memory, admin token "tok", whose clock
// reads *now (from the start of 2026): a test moves time by moving *now.
func clockedKeyring() (k *Keyring, now *time.Time, clock func() time.Time) {
	now = new(time.Time)
	*now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock = func() time.Time { return *now }
	k, _ = NewKeyring(context.Background(), &memStore{}, "tok", clock)
	return k, now, clock
}

// memStore is a Store in memory, for the keyring's own tests.
type memStore struct {
	mu   sync.Mutex
	keys map[string]Stored
}

func (m *memStore) InsertKey(_ context.Context, k Stored) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.keys == nil {
		m.keys = map[string]Stored{}
	}
	m.keys[k.ID] = k
	return nil
}

func (m *memStore) DeleteKey(_ context.Context, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.keys[id]
	delete(m.keys, id)
	return ok, nil
}

func (m *memStore) Keys(context.Context) ([]Stored, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Stored
	for _, k := range m.keys {
		out = append(out, k)
	}
	return out, nil
}

func TestRoles(t *testing.T) {
	want := map[Role][]Action{
		Viewer: {Read},
		Client: {Read, Lock, Fence},
		Guard:  {Read, Fence, Report},
		Admin:  {Read, Lock, Fence, Report, Manage},
	}
	for role, allowed := range want {
		for _, a := range []Action{Read, Lock, Fence, Report, Manage, Action(99)} {
			got := role.Allows(a)
			exp := false
			for _, x := range allowed {
				exp = exp || x == a
			}
			if a == Action(99) {
				exp = role == Admin
			}
			if got != exp {
				t.Errorf("%s allows %d = %v", role, a, got)
			}
		}
	}
	if Role("root").Allows(Read) {
		t.Error("an unknown role may read")
	}
}

func TestKeyringLifecycle(t *testing.T) {
	ctx := context.Background()
	store := &memStore{}
	k, err := NewKeyring(ctx, store, "tok", nil)
	if err != nil {
		t.Fatal(err)
	}
	key, secret, err := k.Create(ctx, "w", Client, []string{"a/"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := k.Authenticate(secret)
	if err != nil || p.KeyID != key.ID || p.Role != Client || !p.Sees("a/1") || p.Sees("b/1") || p.Sees("a") {
		t.Fatalf("authenticate: %+v %v", p, err)
	}
	// A second keyring over the same store (a restart) knows the key.
	k2, _ := NewKeyring(ctx, store, "tok", nil)
	if _, err := k2.Authenticate(secret); err != nil {
		t.Fatalf("after reload: %v", err)
	}
	// Near misses fail: each byte of the secret matters.
	for i := range secret {
		b := []byte(secret)
		b[i] ^= 1
		if _, err := k.Authenticate(string(b)); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("secret with byte %d flipped authenticated", i)
		}
	}
	for _, s := range []string{"", "tok ", "to", secret[:len(secret)-1], secret + "A"} {
		if _, err := k.Authenticate(s); err == nil {
			t.Fatalf("%q authenticated", s)
		}
	}
	if p, err := k.Authenticate("tok"); err != nil || p.Role != Admin {
		t.Fatalf("admin token: %v", err)
	}
	if err := k.Revoke(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Revoked():
	default:
		t.Fatal("Revoked not closed")
	}
	if _, err := k.Authenticate(secret); !errors.Is(err, ErrUnauthenticated) {
		t.Fatal("revoked key authenticated")
	}
	if err := k.Revoke(ctx, key.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second revoke: %v", err)
	}
	// Auth off: nothing authenticates.
	off, _ := NewKeyring(ctx, store, "", nil)
	if off.Enabled() {
		t.Fatal("enabled without a token")
	}
	if _, err := off.Authenticate(""); err == nil {
		t.Fatal("empty secret authenticated")
	}
}

func TestBearerSecret(t *testing.T) {
	for h, want := range map[string]string{
		"Bearer abc": "abc", "bearer abc": "abc", "BEARER abc": "abc", "Bearer  abc": "abc",
		"Basic abc": "", "Bearer": "", "Bearer ": "", "Bearerabc": "", "Bearer a b": "", "abc": "",
	} {
		got, ok := BearerSecret(h)
		if got != want || ok != (want != "") {
			t.Errorf("%q: %q %v", h, got, ok)
		}
	}
}

// Sessions are bounded (the oldest goes first), expire, and end with their key.
func TestSessionsBoundedAndExpiring(t *testing.T) {
	ctx := context.Background()
	k, now, clock := clockedKeyring()
	key, secret, _ := k.Create(ctx, "v", Viewer, nil)
	s := NewSessions(k, 3, time.Hour, clock)
	if _, _, err := s.Login("client", "nope"); err == nil {
		t.Fatal("login with a wrong key")
	}
	var ids []string
	for i := 0; i < 5; i++ {
		id, p, err := s.Login("client", secret)
		if err != nil || p.KeyID != key.ID {
			t.Fatal(err)
		}
		ids = append(ids, id)
		*now = now.Add(time.Minute)
	}
	if s.Len() != 3 {
		t.Fatalf("%d sessions kept, want 3", s.Len())
	}
	for i, id := range ids {
		_, err := s.Principal(id)
		if (err == nil) != (i >= 2) {
			t.Fatalf("session %d: %v", i, err)
		}
	}
	*now = now.Add(time.Hour)
	if _, err := s.Principal(ids[4]); err == nil {
		t.Fatal("expired session accepted")
	}
	id, _, _ := s.Login("client", secret)
	admin, _, _ := s.Login("client", "tok")
	k.Revoke(ctx, key.ID)
	if _, err := s.Principal(id); err == nil {
		t.Fatal("session of a revoked key accepted")
	}
	if p, err := s.Principal(admin); err != nil || p.Role != Admin {
		t.Fatalf("admin session: %v", err)
	}
	s.Logout(admin)
	if _, err := s.Principal(admin); err == nil {
		t.Fatal("session after logout")
	}
}

func TestCreateValidates(t *testing.T) {
	ctx := context.Background()
	k, _ := NewKeyring(ctx, &memStore{}, "tok", nil)
	long := strings.Repeat("x", 161)
	for _, c := range []struct {
		name     string
		role     Role
		prefixes []string
	}{
		{"", Viewer, nil}, {"x", "root", nil}, {"x", Viewer, []string{""}}, {"x", Viewer, []string{long}},
		{"a\x00", Viewer, nil}, {"\xff", Viewer, nil}, {"x", Viewer, make([]string, 33)},
	} {
		if _, _, err := k.Create(ctx, c.name, c.role, c.prefixes); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if len(k.List()) != 0 {
		t.Fatal("invalid keys were made")
	}
}

// BenchmarkAuthenticate is the check every request with a key's secret
// pays (allocations included).
func BenchmarkAuthenticate(b *testing.B) {
	ctx := context.Background()
	k, err := NewKeyring(ctx, &memStore{}, "tok", nil)
	if err != nil {
		b.Fatal(err)
	}
	_, secret, err := k.Create(ctx, "w", Client, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Authenticate(secret); err != nil {
			b.Fatal(err)
		}
	}
}
