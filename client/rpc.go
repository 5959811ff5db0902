package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview/internal/wire"
)

// rpcPool holds the client's one live RPC session, or, while the stream
// cannot be opened, the time until which calls go over the JSON API.
type rpcPool struct {
	mu    sync.Mutex
	sess  *rpcSession
	hooks rpcHooks

	retry time.Duration // how long calls go over the JSON API after a failed dial
	log   *slog.Logger
	// until is when the stream is dialed again after a failed dial;
	// zero while the stream is in use.
	until time.Time
	// told: the logger heard of the failed dial that began this time on
	// the JSON API (it is told again only after the stream opened).
	told bool
}

// defaultRPCRetry is Config.RPCRetryAfter's default.
const defaultRPCRetry = 30 * time.Second

// errUseJSON says that the call goes over the JSON API: the stream could
// not be opened, lately.
var errUseJSON = errors.New("fenceview: the RPC stream is unavailable; use the JSON API")

// rpcHooks let tests see requests queue and hold the writer back; unset
// outside tests.
type rpcHooks struct {
	queued func()          // a call's request is queued
	take   <-chan struct{} // the writer waits for it before taking the queue
}

// streamable reports whether the websocket can go the way hc's requests
// go: hc's Transport is the default or an *http.Transport, whose TLS and
// proxy settings the dialer takes.
func streamable(hc *http.Client) bool {
	if hc == nil || hc.Transport == nil {
		return true
	}
	_, ok := hc.Transport.(*http.Transport)
	return ok
}

// session returns the live session, dialing one if there is none; or
// errUseJSON when the stream could not be opened (now, or lately). A
// dial given up because ctx ended or the client closed is that error.
func (p *rpcPool) session(ctx context.Context, c *Client) (*rpcSession, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sess != nil && p.sess.alive() {
		return p.sess, nil
	}
	if !p.until.IsZero() && c.clock.Now().Before(p.until) {
		return nil, errUseJSON
	}
	// Close cancels a dial in progress, as it does calls.
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(c.life.ctx, cancel)()
	ws, err := c.dialWS(dctx, "/v1/rpc", "")
	if err != nil {
		if c.life.ctx.Err() != nil {
			return nil, ErrClosed
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if answered(err) {
			return nil, err // the server is there and said no: the JSON API would too
		}
		p.until = c.clock.Now().Add(p.retry)
		if !p.told {
			p.told = true
			p.log.Warn("fenceview: the RPC stream could not be opened; calls go over the JSON API until it can be",
				"url", c.base.String(), "retryAfter", p.retry, "err", err)
		}
		return nil, errUseJSON
	}
	p.until, p.told = time.Time{}, false
	p.sess = newRPCSession(ws, p.hooks)
	return p.sess, nil
}

// answered reports whether err is the server's own answer to the
// upgrade, which the JSON API would give too: a refused credential, or
// shedding (429, or a 503 with a Retry-After, sent again after its wait).
// Not a reason to leave the stream.
func answered(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ((ae.StatusCode == http.StatusUnauthorized && ae.Code == "unauthenticated") ||
		ae.StatusCode == http.StatusTooManyRequests || (ae.StatusCode == http.StatusServiceUnavailable && ae.RetryAfter > 0))
}

// dialWS opens a websocket to the route path (with the raw query) of the
// base URL, with the client's credential and TLS settings. A refusal with
// an answer (no key, a revoked one, another origin) is the error the HTTP
// call would give.
func (c *Client) dialWS(ctx context.Context, path, query string) (*websocket.Conn, error) {
	u := *c.base
	u.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
	u.Path += path
	u.RawPath = ""
	u.RawQuery = query
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
			raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
			resp.Body.Close()
			return nil, refusal{}.decode(resp.StatusCode, raw, resp.Header)
		}
		return nil, fmt.Errorf("fenceview: websocket %s: %w", path, err)
	}
	return ws, nil
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
	ws   *websocket.Conn
	kick chan struct{} // one token: requests wait in out
	dead chan struct{}

	loops sync.WaitGroup // the reader and the writer

	mu      sync.Mutex
	next    uint64
	pending map[uint64]chan wire.Answer
	// out holds the requests not yet written, one per line: callers
	// encode into it and the writer takes all of it at once, so one
	// message (one syscall) carries every call made meanwhile.
	out     []byte
	drained chan struct{} // closed when the writer takes out; made by a caller waiting for room
	err     error

	// wmu is held while out is taken and written, by the writer or by a
	// caller writing its own request (call); wbuf is the taken batch.
	wmu  sync.Mutex
	wbuf []byte

	hooks rpcHooks
}

// maxQueued bounds the bytes of requests waiting for the writer; callers
// beyond it wait, as they would for a slow server.
const maxQueued = 4 * wire.MaxBatch

func newRPCSession(ws *websocket.Conn, hooks rpcHooks) *rpcSession {
	s := &rpcSession{ws: ws, kick: make(chan struct{}, 1), dead: make(chan struct{}), pending: make(map[uint64]chan wire.Answer), hooks: hooks}
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

// answerChans recycles the channels of calls that got their answer: the
// reader sends on one exactly once and then forgets it.
var answerChans = sync.Pool{New: func() any { return make(chan wire.Answer, 1) }}

// call sends req and waits for its answer, giving up (with
// context.Canceled, as a context Close cancels would) when closing is
// closed.
func (s *rpcSession) call(ctx context.Context, closing <-chan struct{}, req wire.Request) (wire.Answer, error) {
	s.mu.Lock()
	for s.err == nil && len(s.out) >= maxQueued {
		if s.drained == nil {
			s.drained = make(chan struct{})
		}
		drained := s.drained
		s.mu.Unlock()
		select {
		case <-drained:
		case <-s.dead:
		case <-ctx.Done():
			return wire.Answer{}, ctx.Err()
		case <-closing:
			return wire.Answer{}, context.Canceled
		}
		s.mu.Lock()
	}
	if s.err != nil {
		s.mu.Unlock()
		if a, ok := s.notTaken(); ok {
			return a, nil
		}
		return wire.Answer{}, s.err
	}
	s.next++
	req.ID = s.next
	queued := len(s.out)
	if queued > 0 {
		s.out = append(s.out, '\n')
	}
	s.out = wire.AppendRequest(s.out, &req)
	ch := answerChans.Get().(chan wire.Answer)
	s.pending[req.ID] = ch
	alone := len(s.pending) == 1 && s.hooks.take == nil
	s.mu.Unlock()
	if s.hooks.queued != nil {
		s.hooks.queued()
	}
	if queued == 0 {
		// The first request since the writer last took out. With no
		// other call in flight, nothing is likely to join it: write it
		// here rather than wake the writer (one hand-off fewer for a
		// caller making one call at a time). The write does not block:
		// with no call in flight, the server has read every earlier
		// request but those of calls that gave up, far less than a
		// socket's buffer. Otherwise wake the writer, which lets the
		// calls made meanwhile join.
		if alone && s.wmu.TryLock() {
			err := s.flush()
			s.wmu.Unlock()
			if err != nil {
				s.fail(err)
			}
		} else {
			select {
			case s.kick <- struct{}{}:
			default:
			}
		}
	}
	select {
	case a := <-ch:
		answerChans.Put(ch)
		return a, nil
	case <-s.dead:
		select {
		case a := <-ch: // answered before the session ended
			answerChans.Put(ch)
			return a, nil
		default:
		}
		if a, ok := s.notTaken(); ok {
			return a, nil
		}
		return wire.Answer{}, s.deadErr()
	case <-ctx.Done():
		s.forget(req.ID)
		return wire.Answer{}, ctx.Err()
	case <-closing:
		s.forget(req.ID)
		return wire.Answer{}, context.Canceled
	}
}

// notTaken is the answer of a call left without one when the server
// closed the session for its service's end (wire.ServiceEnded: a cluster
// leader's term ended). The server answered every request it took before
// that close, so this one was not taken: it is refused as a closed
// service refuses a change (503 unavailable, no Retry-After), and
// exchangeRPC sends it once more on a new connection.
func (s *rpcSession) notTaken() (wire.Answer, bool) {
	var ce *websocket.CloseError
	if err := s.deadErr(); errors.As(err, &ce) && ce.Code == websocket.CloseServiceRestart && ce.Text == wire.ServiceEnded {
		return wire.Answer{Status: http.StatusServiceUnavailable, Body: notTakenBody}, true
	}
	return wire.Answer{}, false
}

var notTakenBody = []byte(`{"error":"the server's service ended before it read the request; nothing was changed","code":"unavailable"}`)

// forget drops the call id gave up on: the request may be on its way, and
// its answer, if any, is dropped.
func (s *rpcSession) forget(id uint64) {
	s.mu.Lock()
	delete(s.pending, id)
	s.mu.Unlock()
}

// writeLoop sends every request queued at the time as one message (more
// when they pass wire.MaxBatch bytes).
func (s *rpcSession) writeLoop() {
	for {
		select {
		case <-s.kick:
		case <-s.dead:
			return
		}
		// Callers woken together (by one message of answers) queue their
		// next requests together: let them, and send those in one go.
		runtime.Gosched()
		if s.hooks.take != nil {
			select {
			case <-s.hooks.take:
			case <-s.dead:
				return
			}
		}
		s.wmu.Lock()
		err := s.flush()
		s.wmu.Unlock()
		if err != nil {
			s.fail(err)
			return
		}
	}
}

// flush takes every queued request and writes them, as one message
// unless they pass wire.MaxBatch bytes. s.wmu must be held.
func (s *rpcSession) flush() error {
	s.mu.Lock()
	s.wbuf, s.out = s.out, s.wbuf[:0]
	if s.drained != nil {
		close(s.drained)
		s.drained = nil
	}
	s.mu.Unlock()
	for msg, rest := s.wbuf, []byte(nil); len(msg) > 0; msg = rest {
		msg, rest = wire.SplitBatch(msg)
		s.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if err := s.ws.WriteMessage(websocket.TextMessage, msg); err != nil {
			return fmt.Errorf("fenceview: rpc stream: %w", err)
		}
	}
	if cap(s.wbuf) > wire.MaxBatch {
		s.wbuf = nil // a burst's buffer is not kept
	}
	return nil
}

func (s *rpcSession) readLoop() {
	var buf []byte
	for {
		msg, err := readMessage(s.ws, buf[:0])
		if err != nil {
			s.fail(fmt.Errorf("fenceview: rpc stream: %w", err))
			return
		}
		// The answers' bodies are read by their callers while the next
		// message is read into buf: they get one copy of this one. A
		// rare huge message's buffer is not kept.
		buf = msg
		if cap(buf) > 1<<20 {
			buf = nil
		}
		msg = bytes.Clone(msg)
		bad, stale := false, false
		wire.Lines(msg, func(line []byte) bool {
			var a wire.Answer
			if err := wire.DecodeAnswer(line, &a); err != nil {
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
			if a.Status == http.StatusServiceUnavailable && termEnded(a.Body) {
				stale = true
			}
			return true
		})
		if bad {
			return
		}
		if stale {
			s.fail(errStaleStream)
			return
		}
	}
}

// errStaleStream ends a session whose server stopped serving it.
var errStaleStream = errors.New("fenceview: rpc stream: the server stopped serving this connection (shutting down, or a cluster leader's term ended)")

// termEnded reports whether a 503 answer's body is one without a
// Retry-After: the connection's server is shutting down, or (in a
// cluster) the term that served the connection ended while the
// connection lives on. Every later call on it would get the same, so the
// session ends and the next call opens a new one.
func termEnded(body []byte) bool {
	var b struct {
		Code         string `json:"code"`
		RetryAfterMs int64  `json:"retryAfterMs"`
	}
	return json.Unmarshal(body, &b) == nil && b.Code == "unavailable" && b.RetryAfterMs == 0
}

// readMessage reads the next message into buf, reused from the last one.
func readMessage(ws *websocket.Conn, buf []byte) ([]byte, error) {
	_, r, err := ws.NextReader()
	if err != nil {
		return nil, err
	}
	return wire.ReadAll(r, buf)
}
