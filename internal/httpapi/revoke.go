package httpapi

import (
	"sync"

	"github.com/fenceview/fenceview/internal/auth"
)

// opGate counts, per key, the RPC operations being applied, so that
// revoking a key can wait until none of them is: from the revocation's
// answer on, nothing more of that key is committed. An operation enters
// only while its key holds, checked under the same lock that drain takes
// after the revocation, so none slips in between.
type opGate struct {
	mu   sync.Mutex
	keys map[string]*gateCount // by key id; an entry lives while ops run
}

type gateCount struct {
	n    int
	idle chan struct{} // made by drain, closed when n reaches 0
}

// enter reports whether p may apply one more operation; when true the
// caller must call leave when it is applied (or refused).
func (g *opGate) enter(p *auth.Principal) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if p.Gone() {
		return false
	}
	if g.keys == nil {
		g.keys = map[string]*gateCount{}
	}
	c := g.keys[p.KeyID]
	if c == nil {
		c = &gateCount{}
		g.keys[p.KeyID] = c
	}
	c.n++
	return true
}

func (g *opGate) leave(p *auth.Principal) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.keys[p.KeyID]
	if c.n--; c.n == 0 {
		delete(g.keys, p.KeyID)
		if c.idle != nil {
			close(c.idle)
		}
	}
}

// drain waits until no operation of key id is being applied. Called after
// the key is revoked, it returns once the last one that entered before is
// done; every later one is refused by enter.
func (g *opGate) drain(id string) {
	g.mu.Lock()
	c := g.keys[id]
	if c == nil {
		g.mu.Unlock()
		return
	}
	if c.idle == nil {
		c.idle = make(chan struct{})
	}
	idle := c.idle
	g.mu.Unlock()
	<-idle
}
