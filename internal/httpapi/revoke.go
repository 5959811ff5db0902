package httpapi

import (
	"context"
	"net/http"
	"sync"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/wire"
)

// opGate counts, per key, the operations being applied (RPC operations,
// and the JSON API's lock operations, fences and reports), so that
// revoking a key can wait until none of them is: from the revocation's
// answer on, nothing more of that key is committed. An operation enters
// only while its key holds, checked under the same lock that drain takes
// after the revocation, so none slips in between. A JSON request that may
// wait for a lock enters with its cancel: drain ends its wait (an acquire
// waiting for a held lock) instead of letting it be granted after the
// revocation. One that never waits (a fence, a release) is only counted:
// drain waits for it, at most its wait for a seat (admission's MaxWait),
// and a request seated after the revocation is refused (admitted).
type opGate struct {
	mu    sync.Mutex
	keys  map[string]*gateCount // by key id; an entry lives while ops run
	spare *gateCount            // the last entry let go, reused: a key's requests one after another allocate none
}

type gateCount struct {
	n    int
	idle chan struct{} // made by drain, closed when n reaches 0
	reqs *gatedRequest // the JSON requests in, to end at drain: a list through their own links
}

// gatedRequest is a JSON API request inside the gate.
type gatedRequest struct {
	cancel     context.CancelCauseFunc
	prev, next *gatedRequest
}

// waitField is the request field of the operations that may wait.
var waitField = wire.FieldsOf("waitMs")

// errKeyGone is the answer of a request whose key was revoked while it
// was being served (errorBody): a 401, whatever the operation said.
var errKeyGone = fenceview.Errorf(fenceview.EUNAUTHENTICATED, "key revoked or session ended")

// gateRequest serves r inside the gate when it changes state for a key
// that can be revoked, and refuses it (401) when the key is gone already.
// r is served as p (admitPrincipal's), its context made once.
func (s *Server) gateRequest(w http.ResponseWriter, r *http.Request, o *operation, p *auth.Principal, next http.Handler) {
	if p.KeyID == "" || r.Method == http.MethodGet {
		next.ServeHTTP(w, withPrincipal(r, p)) // auth off, and reads and websockets (the RPC stream gates each op)
		return
	}
	if a := o.action; o.public || (a != auth.Lock && a != auth.Fence && a != auth.Report) {
		next.ServeHTTP(w, withPrincipal(r, p)) // an admin's call: its key's own revocation must not wait for it
		return
	}
	if o.fields&waitField == 0 {
		// It never waits for a lock: it ends on its own, so drain need only
		// count it, and its context costs no cancel of its own.
		r = withPrincipal(r, p)
		if !s.ops.enter(p) {
			s.writeError(w, r, errKeyGone)
			return
		}
		defer s.ops.leave(p)
		next.ServeHTTP(w, r)
		return
	}
	ctx, cancel := context.WithCancelCause(principalContext(r.Context(), p))
	defer cancel(nil)
	gr := &gatedRequest{cancel: cancel}
	if !s.ops.enterRequest(p, gr) {
		s.writeError(w, r.WithContext(ctx), errKeyGone)
		return
	}
	defer s.ops.leaveRequest(p, gr)
	next.ServeHTTP(w, r.WithContext(ctx))
}

// enterRequest is enter for a JSON request, which drain cancels.
func (g *opGate) enterRequest(p *auth.Principal, gr *gatedRequest) bool {
	if !g.enter(p) {
		return false
	}
	g.mu.Lock()
	c := g.keys[p.KeyID]
	gr.next = c.reqs
	if c.reqs != nil {
		c.reqs.prev = gr
	}
	c.reqs = gr
	g.mu.Unlock()
	return true
}

func (g *opGate) leaveRequest(p *auth.Principal, gr *gatedRequest) {
	g.mu.Lock()
	c := g.keys[p.KeyID]
	if gr.prev != nil {
		gr.prev.next = gr.next
	} else {
		c.reqs = gr.next
	}
	if gr.next != nil {
		gr.next.prev = gr.prev
	}
	gr.prev, gr.next = nil, nil
	g.mu.Unlock()
	g.leave(p)
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
		c, g.spare = g.spare, nil
		if c == nil {
			c = &gateCount{}
		}
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
			close(c.idle) // a drain holds this entry: not reused
			return
		}
		g.spare = c // n 0, no requests listed, no idle: as new
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
	var cancels []context.CancelCauseFunc
	for gr := c.reqs; gr != nil; gr = gr.next {
		cancels = append(cancels, gr.cancel)
	}
	g.mu.Unlock()
	for _, cancel := range cancels {
		cancel(errKeyGone) // a waiting acquire gives up, answered 401
	}
	<-idle
}
