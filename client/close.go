package client

import (
	"context"
	"sync"
)

// life is what Close ends: the calls in flight, the watchdogs of the locks
// still held, and (in rpc.go) the RPC connection.
type life struct {
	ctx    context.Context // cancelled by Close: calls in flight give up
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	calls  sync.WaitGroup
	holds  map[*hold]struct{} // holds whose watchdog runs
}

func newLife() *life {
	ctx, cancel := context.WithCancel(context.Background())
	return &life{ctx: ctx, cancel: cancel, holds: make(map[*hold]struct{})}
}

// begin admits one call: ErrClosed after Close, else a context that Close
// also cancels, and the function that ends the call.
func (l *life) begin(ctx context.Context) (context.Context, func(), error) {
	if err := l.enter(); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(l.ctx, cancel)
	return ctx, func() { stop(); cancel(); l.calls.Done() }, nil
}

// enter admits one call that watches l.ctx itself (an RPC call: deriving
// a context per call costs more than the call's own work); l.calls.Done
// ends it.
func (l *life) enter() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.calls.Add(1)
	return nil
}

// watch registers a hold whose watchdog is about to start; false after
// Close (the hold must then not start one).
func (l *life) watch(h *hold) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.holds[h] = struct{}{}
	return true
}

func (l *life) forget(h *hold) {
	l.mu.Lock()
	delete(l.holds, h)
	l.mu.Unlock()
}

// Close ends the client, for good. Like an etcd Session, which owns its
// lease's keep-alive and ends it on Close, the client owns the watchdogs of
// its locks and stops them:
//
//   - every call after Close, of the Client and of its Mutexes, returns an
//     error matching ErrClosed, and sends nothing;
//   - calls in flight are cancelled (the server may or may not have done
//     them, as with any request cut off);
//   - every lock still held stops being renewed and its Context is
//     cancelled with cause ErrClosed. Close does not release them: it sends
//     nothing, so it cannot hang on an unreachable server. The server frees
//     each such lock when its lease runs out (the client's lease, Config.Lease:
//     30s by default); Unlock before Close to free one at once. The
//     tokens already granted stay valid until a newer grant, as always.
//   - the RPC connection is closed and idle HTTP connections are dropped;
//     when Close returns, no goroutine of the client is left.
//
// Close is safe to call more than once and from any goroutine; it always
// returns nil.
func (c *Client) Close() error {
	l := c.life
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	holds := l.holds
	l.holds = nil
	l.mu.Unlock()

	l.cancel()
	for h := range holds {
		h.end(ErrClosed)
	}
	c.sched.wait()
	l.calls.Wait()
	if c.rpc != nil {
		c.rpc.close()
	}
	c.hc.CloseIdleConnections()
	return nil
}
