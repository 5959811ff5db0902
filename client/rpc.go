package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview/internal/wire"
)

// WithRPC sends lock operations (acquire, renew, release) and fenced writes
// over one websocket to the server's RPC stream (/v1/rpc) instead of one
// HTTP request each. Calls of every goroutine share the connection and are
// batched into few messages, which is what lets many concurrent callers on
// one host go several times faster. Answers, errors included, are the same
// as over HTTP; state, force-expire and reports still use HTTP.
//
// The connection is dialed on first use and again after it breaks, never
// after Close. A call in flight when it breaks fails with a network error:
// like an HTTP request cut off, the server may or may not have done it.
func WithRPC() Option { return func(c *Client) { c.rpc = &rpcPool{} } }

// rpcRequest is one call; for HTTP the same struct is the body (id, op and
// resource left empty).
type rpcRequest struct {
	ID       uint64 `json:"id,omitempty"`
	Op       string `json:"op,omitempty"`
	Resource string `json:"resource,omitempty"`
	Holder   string `json:"holder,omitempty"`
	LeaseMs  int64  `json:"leaseMs,omitempty"`
	WaitMs   int64  `json:"waitMs,omitempty"`
	Token    int64  `json:"token,omitempty"`
	Issuer   string `json:"issuer,omitempty"`
	Scope    string `json:"scope,omitempty"`
	// Signature of Token, for a server with --require-signatures.
	Signature string `json:"signature,omitempty"`
}

type rpcAnswer struct {
	ID     uint64          `json:"id"`
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

// exchange makes one lock or fence call, over the RPC stream when the
// client has one, else over HTTP.
func (c *Client) exchange(ctx context.Context, op, resource string, req rpcRequest, out any, errFor func(int, []byte, http.Header) error) error {
	if c.rpc == nil {
		kind, action := "locks", op
		if op == "fence" {
			kind, action = "fence", ""
		}
		return c.call(ctx, http.MethodPost, c.endpoint(kind, resource, action), nil, req, out, errFor)
	}
	req.Op, req.Resource = op, resource
	ctx, done, err := c.life.begin(ctx)
	if err != nil {
		return err
	}
	defer done()
	sess, err := c.rpc.session(ctx, c)
	if err != nil {
		return err
	}
	a, err := sess.call(ctx, req)
	if err != nil {
		return err
	}
	if a.Status != http.StatusOK {
		if errFor != nil {
			if err := errFor(a.Status, a.Body, nil); err != nil {
				return err
			}
		}
		return apiError(a.Status, a.Body, nil)
	}
	if out != nil {
		if err := decodeAnswerBody(a.Body, out); err != nil {
			return fmt.Errorf("fenceview: decoding answer: %w", err)
		}
	}
	return nil
}

// rpcPool holds the client's one live RPC session.
type rpcPool struct {
	mu   sync.Mutex
	sess *rpcSession
}

func (p *rpcPool) session(ctx context.Context, c *Client) (*rpcSession, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sess != nil && p.sess.alive() {
		return p.sess, nil
	}
	u := *c.base
	u.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
	u.Path += "/v1/rpc"
	u.RawPath = ""
	dialer := websocket.Dialer{HandshakeTimeout: 10 * time.Second, ReadBufferSize: 16 << 10, WriteBufferSize: 16 << 10}
	if tr, ok := c.hc.Transport.(*http.Transport); ok {
		dialer.TLSClientConfig = tr.TLSClientConfig
		dialer.Proxy = tr.Proxy
	}
	var h http.Header
	if cred := c.credential(); cred != "" {
		h = http.Header{"Authorization": {"Bearer " + cred}}
	}
	ws, resp, err := dialer.DialContext(ctx, u.String(), h)
	if err != nil {
		if resp != nil && resp.StatusCode >= 400 {
			// Refused with an answer (no key, a revoked one, another
			// origin): the same error the HTTP call would give.
			raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
			resp.Body.Close()
			return nil, apiError(resp.StatusCode, raw, nil)
		}
		return nil, fmt.Errorf("fenceview: rpc stream: %w", err)
	}
	p.sess = newRPCSession(ws)
	return p.sess, nil
}

// close ends the live session and waits for its reader and writer.
func (p *rpcPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sess != nil {
		p.sess.fail(ErrClosed)
		p.sess.loops.Wait()
	}
}

// rpcSession is one connection: one writer, one reader, and the calls
// waiting for their answers.
type rpcSession struct {
	ws    *websocket.Conn
	sendq chan []byte
	dead  chan struct{}

	loops sync.WaitGroup // the reader and the writer

	mu      sync.Mutex
	next    uint64
	pending map[uint64]chan rpcAnswer
	err     error
}

func newRPCSession(ws *websocket.Conn) *rpcSession {
	s := &rpcSession{ws: ws, sendq: make(chan []byte, 1024), dead: make(chan struct{}), pending: make(map[uint64]chan rpcAnswer)}
	ws.SetReadLimit(16 << 20)
	s.loops.Add(2)
	go func() { defer s.loops.Done(); s.readLoop() }()
	go func() { defer s.loops.Done(); s.writeLoop() }()
	return s
}

func (s *rpcSession) alive() bool {
	select {
	case <-s.dead:
		return false
	default:
		return true
	}
}

func (s *rpcSession) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	s.err = err
	close(s.dead)
	s.ws.Close()
}

func (s *rpcSession) deadErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *rpcSession) call(ctx context.Context, req rpcRequest) (rpcAnswer, error) {
	ch := make(chan rpcAnswer, 1)
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return rpcAnswer{}, s.err
	}
	s.next++
	req.ID = s.next
	s.pending[req.ID] = ch
	s.mu.Unlock()
	forget := func() {
		s.mu.Lock()
		delete(s.pending, req.ID)
		s.mu.Unlock()
	}
	b, err := appendRPCRequest(nil, &req)
	if err != nil {
		forget()
		return rpcAnswer{}, err
	}
	select {
	case s.sendq <- b:
	case <-s.dead:
		return rpcAnswer{}, s.deadErr()
	case <-ctx.Done():
		forget()
		return rpcAnswer{}, ctx.Err()
	}
	select {
	case a := <-ch:
		return a, nil
	case <-s.dead:
		return rpcAnswer{}, s.deadErr()
	case <-ctx.Done():
		forget()
		return rpcAnswer{}, ctx.Err()
	}
}

// writeLoop sends every request queued at the time as one message.
func (s *rpcSession) writeLoop() {
	var batch []byte
	for {
		select {
		case b := <-s.sendq:
			batch = wire.Batch(batch, b, s.sendq)
			s.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if err := s.ws.WriteMessage(websocket.TextMessage, batch); err != nil {
				s.fail(fmt.Errorf("fenceview: rpc stream: %w", err))
				return
			}
		case <-s.dead:
			return
		}
	}
}

func (s *rpcSession) readLoop() {
	for {
		_, msg, err := s.ws.ReadMessage()
		if err != nil {
			s.fail(fmt.Errorf("fenceview: rpc stream: %w", err))
			return
		}
		bad := false
		wire.Lines(msg, func(line []byte) bool {
			var a rpcAnswer
			if err := decodeRPCAnswer(line, &a); err != nil {
				s.fail(fmt.Errorf("fenceview: rpc stream: bad answer: %w", err))
				bad = true
				return false
			}
			s.mu.Lock()
			ch := s.pending[a.ID]
			delete(s.pending, a.ID)
			s.mu.Unlock()
			if ch != nil {
				ch <- a
			}
			return true
		})
		if bad {
			return
		}
	}
}
