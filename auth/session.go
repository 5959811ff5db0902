package auth

import (
	"container/list"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"sync"
	"time"
)

// SessionCookie is the name of the dashboard's session cookie, set by the
// dashboard's login and read by the API's access check.
const SessionCookie = "fenceview_session"

// Sessions are the dashboard's logins: server-side, bounded in number and
// expiring. The cookie carries a random id; the table keeps only its hash
// and the key it stands for, so revoking the key ends its sessions too.
type Sessions struct {
	keys *Keyring
	now  func() time.Time
	ttl  time.Duration
	max  int

	mu    sync.Mutex
	byID  map[[sha256.Size]byte]*list.Element
	order *list.List // oldest first; all share one ttl, so also by expiry
}

type session struct {
	hash [sha256.Size]byte
	// principal is the credential logged in with: a session of a key
	// revoked, or of an admin token replaced, since then is over.
	principal *Principal
	expires   time.Time
	ended     chan struct{} // closed when the session is removed
}

// NewSessions returns a session table of at most max sessions, each lasting
// ttl from login. When full, the oldest session is ended to make room.
func NewSessions(keys *Keyring, max int, ttl time.Duration, now func() time.Time) *Sessions {
	if now == nil {
		now = time.Now
	}
	return &Sessions{keys: keys, now: now, ttl: ttl, max: max, byID: map[[sha256.Size]byte]*list.Element{}, order: list.New()}
}

// TTL is how long a session lasts.
func (s *Sessions) TTL() time.Duration { return s.ttl }

// Login checks a secret (a key of any role, or the admin token) and starts
// a session for it, returning the cookie value.
func (s *Sessions) Login(secret string) (string, *Principal, error) {
	p, err := s.keys.Authenticate(secret)
	if err != nil {
		return "", nil, err
	}
	var b [32]byte
	rand.Read(b[:])
	id := base64.RawURLEncoding.EncodeToString(b[:])
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(now)
	for s.order.Len() >= s.max {
		s.removeLocked(s.order.Front())
	}
	ss := &session{hash: sha256.Sum256([]byte(id)), principal: p, expires: now.Add(s.ttl), ended: make(chan struct{})}
	s.byID[ss.hash] = s.order.PushBack(ss)
	return id, p, nil
}

// Principal returns who a session cookie stands for: ErrUnauthenticated
// when unknown, expired, or its key revoked. The principal's Ended is
// closed when the session ends.
func (s *Sessions) Principal(id string) (*Principal, error) {
	h := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	el := s.byID[h]
	if el == nil {
		return nil, ErrUnauthenticated
	}
	ss := el.Value.(*session)
	if !s.now().Before(ss.expires) || ss.principal.Gone() {
		s.removeLocked(el)
		return nil, ErrUnauthenticated
	}
	p := *ss.principal
	p.ended = ss.ended
	return &p, nil
}

// Sweep ends every expired session, closing its principals' Ended: a
// stream opened with a session ends when the session does, not at its
// next request. The server calls it on a timer.
func (s *Sessions) Sweep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(s.now())
}

// Logout ends a session; unknown ids are ignored.
func (s *Sessions) Logout(id string) {
	h := sha256.Sum256([]byte(id))
	s.mu.Lock()
	if el := s.byID[h]; el != nil {
		s.removeLocked(el)
	}
	s.mu.Unlock()
}

// Len is the number of sessions held.
func (s *Sessions) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len()
}

func (s *Sessions) expireLocked(now time.Time) {
	for el := s.order.Front(); el != nil && !now.Before(el.Value.(*session).expires); el = s.order.Front() {
		s.removeLocked(el)
	}
}

func (s *Sessions) removeLocked(el *list.Element) {
	ss := el.Value.(*session)
	delete(s.byID, ss.hash)
	s.order.Remove(el)
	close(ss.ended)
}
