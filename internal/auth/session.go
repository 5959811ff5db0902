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

// defaultSessionsPerKey bounds the sessions one key may hold: a person on a
// few browsers, or a team sharing a viewer key, many times over.
const defaultSessionsPerKey = 100

// Sessions are the dashboard's logins: server-side, bounded in number and
// expiring. The cookie carries a random id; the table keeps only its hash
// and the key it stands for, so revoking the key ends its sessions too.
//
// Each key may hold at most PerKey sessions: its own oldest ends to make
// room, never another key's. When the whole table is full, the oldest
// session of the key holding the most goes, so a flood of logins with one
// key ends that key's sessions, not the admin's.
type Sessions struct {
	keys *Keyring
	now  func() time.Time
	ttl  time.Duration
	max  int
	// PerKey is the most sessions one key holds (default
	// defaultSessionsPerKey, at most the table's size). Throttle, when
	// set, limits logins per client address and per key.
	PerKey   int
	Throttle *Throttle

	mu    sync.Mutex
	byID  map[[sha256.Size]byte]*session
	order *list.List            // every session, oldest first; all share one ttl, so also by expiry
	byKey map[string]*list.List // each key's sessions, oldest first
}

type session struct {
	hash [sha256.Size]byte
	// principal is the credential logged in with: a session of a key
	// revoked, or of an admin token replaced, since then is over.
	principal *Principal
	expires   time.Time
	ended     chan struct{} // closed when the session is removed
	el        *list.Element // in order
	keyEl     *list.Element // in byKey[principal.KeyID]
}

// NewSessions returns a session table of at most max sessions, each lasting
// ttl from login.
func NewSessions(keys *Keyring, max int, ttl time.Duration, now func() time.Time) *Sessions {
	if now == nil {
		now = time.Now
	}
	return &Sessions{keys: keys, now: now, ttl: ttl, max: max, PerKey: defaultSessionsPerKey,
		byID: map[[sha256.Size]byte]*session{}, order: list.New(), byKey: map[string]*list.List{}}
}

// TTL is how long a session lasts.
func (s *Sessions) TTL() time.Duration { return s.ttl }

// Login checks a secret (a key of any role, or the admin token) sent from
// client (ClientOf the request's address) and starts a session for it,
// returning the cookie value. Too many attempts from client, or logins
// with the key, are a *LimitError.
func (s *Sessions) Login(client, secret string) (string, *Principal, error) {
	if err := s.Throttle.checkLogin(client); err != nil {
		return "", nil, err
	}
	p, err := s.keys.Authenticate(secret)
	if err != nil {
		s.Throttle.BadCredential(client)
		return "", nil, err
	}
	if err := s.Throttle.checkKeyLogin(p.KeyID); err != nil {
		return "", nil, err
	}
	var b [32]byte
	rand.Read(b[:])
	id := base64.RawURLEncoding.EncodeToString(b[:])
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(now)
	perKey := min(max(s.PerKey, 1), s.max)
	for mine := s.byKey[p.KeyID]; mine != nil && mine.Len() >= perKey; {
		s.removeLocked(mine.Front().Value.(*session))
	}
	for s.order.Len() >= s.max {
		s.removeLocked(s.largestLocked().Front().Value.(*session))
	}
	ss := &session{hash: sha256.Sum256([]byte(id)), principal: p, expires: now.Add(s.ttl), ended: make(chan struct{})}
	mine := s.byKey[p.KeyID]
	if mine == nil {
		mine = list.New()
		s.byKey[p.KeyID] = mine
	}
	ss.el, ss.keyEl = s.order.PushBack(ss), mine.PushBack(ss)
	s.byID[ss.hash] = ss
	return id, p, nil
}

// largestLocked is the session list of the key holding the most sessions
// (of those, the one whose oldest session is oldest).
func (s *Sessions) largestLocked() *list.List {
	var big *list.List
	for _, l := range s.byKey {
		if big == nil || l.Len() > big.Len() ||
			l.Len() == big.Len() && l.Front().Value.(*session).expires.Before(big.Front().Value.(*session).expires) {
			big = l
		}
	}
	return big
}

// Principal returns who a session cookie stands for: ErrUnauthenticated
// when unknown, expired, or its key revoked. The principal's Ended is
// closed when the session ends.
func (s *Sessions) Principal(id string) (*Principal, error) {
	h := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.byID[h]
	if ss == nil {
		return nil, ErrUnauthenticated
	}
	if !s.now().Before(ss.expires) || ss.principal.Gone() {
		s.removeLocked(ss)
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
	if ss := s.byID[h]; ss != nil {
		s.removeLocked(ss)
	}
	s.mu.Unlock()
}

// Len is the number of sessions held.
func (s *Sessions) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len()
}

// LenOf is the number of sessions key id holds.
func (s *Sessions) LenOf(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.byKey[id]; l != nil {
		return l.Len()
	}
	return 0
}

func (s *Sessions) expireLocked(now time.Time) {
	for el := s.order.Front(); el != nil && !now.Before(el.Value.(*session).expires); el = s.order.Front() {
		s.removeLocked(el.Value.(*session))
	}
}

func (s *Sessions) removeLocked(ss *session) {
	delete(s.byID, ss.hash)
	s.order.Remove(ss.el)
	key := ss.principal.KeyID
	mine := s.byKey[key]
	mine.Remove(ss.keyEl)
	if mine.Len() == 0 {
		delete(s.byKey, key)
	}
	close(ss.ended)
}
