package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/auth"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/wire"
)

// The RPC stream (GET /v1/rpc, a websocket) carries the lock operations and
// fenced writes of many callers over one connection. An HTTP/1.1 request
// costs a round trip of parsing and syscalls per call; here requests and
// answers are batched per message, so a busy connection spends its time on
// the work itself. Answers are exactly what the JSON API answers.
//
// A message holds one or more requests, one JSON object per line:
//
//	{"id":7,"op":"acquire","resource":"r","holder":"a","leaseMs":30000,"waitMs":0}
//	{"id":8,"op":"fence","resource":"r","token":12}
//
// op is acquire, renew, release, fence or lock. Answers come back as they
// are ready, in any order, batched the same way:
//
//	{"id":7,"status":200,"body":{...the JSON API's answer...}}
const (
	rpcMaxMessage  = 1 << 20 // bytes in one message from a client
	rpcMaxInFlight = 4096    // requests of one connection being served at once
	rpcIdleWorkers = 128     // workers of one connection kept waiting for requests
)

type rpcRequest struct {
	ID       uint64  `json:"id"`
	Op       string  `json:"op"`
	Resource string  `json:"resource"`
	Holder   *string `json:"holder"`
	LeaseMs  jsonInt `json:"leaseMs"`
	WaitMs   jsonInt `json:"waitMs"`
	Token    jsonInt `json:"token"`
	Issuer   string  `json:"issuer"`
	Scope    string  `json:"scope"`
	Source   string  `json:"source"`
	// Signature of the token, as in the JSON fence body.
	Signature string `json:"signature"`
	Mode      string `json:"mode"` // of a fence, as in the JSON fence body
}

type rpcAnswer struct {
	ID     uint64 `json:"id"`
	Status int    `json:"status"`
	Body   any    `json:"body"`
}

var rpcUpgrader = websocket.Upgrader{
	ReadBufferSize:  16 << 10,
	WriteBufferSize: 16 << 10,
	Error:           upgrader.Error,
}

func (s *Server) handleRPC(w http.ResponseWriter, r *http.Request) {
	if !websocket.IsWebSocketUpgrade(r) {
		s.writeError(w, r, fenceview.Errorf(fenceview.EINVALID, "this route speaks websocket only"))
		return
	}
	if !s.openWebsocket(w, r) {
		return
	}
	defer s.closeWebsocket()
	conn, err := rpcUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer conn.Close()
	source := "rpc:" + clientHost(r)
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	go func() {
		// A revoked key's connection ends at once; the reader below then
		// stops taking requests.
		select {
		case <-auth.FromContext(ctx).Revoked():
			closeRevoked(conn, nil)
			conn.Close()
		case <-ctx.Done():
		}
	}()

	answers := make(chan []byte, 256)
	writerDone := make(chan struct{})
	out := &rpcOut{conn: conn}
	go rpcWriter(out, answers, writerDone)

	var inflight sync.WaitGroup
	var waiting atomic.Int64 // acquires of this connection with waitMs > 0
	slots := make(chan struct{}, rpcMaxInFlight)
	conn.SetReadLimit(rpcMaxMessage)
	conn.SetReadDeadline(time.Now().Add(pongWait))
	conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(pongWait)) })
	// Requests are served by workers that outlive them: a worker done
	// with one takes the next from work, or leaves when rpcIdleWorkers
	// already wait. A goroutine per request would start each on a small
	// stack and grow it (a grant's path is deep), about 5% of the server's
	// CPU under load.
	work := make(chan rpcRequest) // unbuffered: a send succeeds only to an idle worker
	var idle atomic.Int64
	serve := func(req rpcRequest) {
		if req.Op == "acquire" && req.WaitMs.Value > 0 {
			defer waiting.Add(-1)
		}
		status, body := s.dispatchRPC(ctx, req, source)
		answers <- appendRPCAnswer(nil, req.ID, status, body)
		<-slots
	}
	worker := func(req rpcRequest) {
		defer inflight.Done()
		for {
			serve(req)
			if idle.Add(1) > rpcIdleWorkers {
				idle.Add(-1)
				return
			}
			next, ok := <-work
			idle.Add(-1)
			if !ok {
				return
			}
			req = next
		}
	}
	var msg []byte // reused: requests are decoded into their own strings
	for {
		_, r, err := conn.NextReader()
		if err != nil {
			break
		}
		if msg, err = wire.ReadAll(r, msg); err != nil {
			break
		}
		conn.SetReadDeadline(time.Now().Add(pongWait))
		single := bytes.IndexByte(bytes.TrimSpace(msg), '\n') < 0
		wire.Lines(msg, func(line []byte) bool {
			var req rpcRequest
			if err := decodeRPCRequest(line, &req); err != nil {
				answers <- appendRPCAnswer(nil, req.ID, http.StatusBadRequest,
					map[string]any{"error": "invalid request: " + describeJSONError(err)})
				return true
			}
			if req.Op == "acquire" && req.WaitMs.Value > 0 {
				if waiting.Add(1) > rpcMaxWaiting {
					waiting.Add(-1)
					answers <- appendRPCAnswer(nil, req.ID, http.StatusTooManyRequests, map[string]any{
						"error": fmt.Sprintf("%d acquires of this connection are already waiting; use waitMs 0 or another connection", rpcMaxWaiting)})
					return true
				}
			}
			if single && len(slots) == 0 && !(req.Op == "acquire" && req.WaitMs.Value > 0) {
				// The connection's only request, and one that cannot wait
				// long: serve it here, and answer it here unless the
				// writer is busy. One client calling one request at a
				// time (Redis's usual caller) saves two goroutine
				// hand-offs per call; a busy connection changes nothing.
				status, body := s.dispatchRPC(ctx, req, source)
				a := appendRPCAnswer(nil, req.ID, status, body)
				if len(answers) == 0 && out.mu.TryLock() {
					out.send(a)
					out.mu.Unlock()
				} else {
					answers <- a
				}
				return true
			}
			slots <- struct{}{}
			select {
			case work <- req: // an idle worker takes it
			default:
				inflight.Add(1)
				go worker(req)
			}
			return true
		})
		if cap(msg) > wire.MaxBatch {
			msg = nil // a rare big message's buffer is not kept
		}
	}
	// The client is gone: waiting acquires give up, the rest finish (their
	// changes are committed whether or not anyone reads the answer).
	cancel()
	close(work)
	inflight.Wait()
	close(answers)
	<-writerDone
}

// dispatchRPC runs one request through the same code as the JSON API;
// origin (rpc:<host>) is the connection's source when auth is off.
func (s *Server) dispatchRPC(ctx context.Context, req rpcRequest, origin string) (int, any) {
	if err := guard.ValidateResourceID(req.Resource); err != nil {
		return s.errorBody(ctx, fenceview.Errorf(fenceview.EINVALID, "%v", err))
	}
	if err := rpcAllowed(ctx, req); err != nil {
		return s.errorBody(ctx, err)
	}
	switch req.Op {
	case "acquire", "renew", "release":
		lr := lockRequest{Holder: req.Holder, LeaseMs: req.LeaseMs, WaitMs: req.WaitMs}
		if err := lr.validate(); err != nil {
			return s.errorBody(ctx, err)
		}
		switch req.Op {
		case "acquire":
			return s.acquire(ctx, req.Resource, lr)
		case "renew":
			return s.renew(ctx, req.Resource, lr)
		default:
			return s.release(ctx, req.Resource, lr)
		}
	case "fence":
		fr := fenceRequest{Token: req.Token, Issuer: req.Issuer, Scope: req.Scope, Source: req.Source, Signature: req.Signature, Mode: req.Mode, origin: origin}
		if req.Holder != nil {
			fr.Holder = *req.Holder
		}
		return s.fence(ctx, req.Resource, fr)
	case "lock":
		ls, err := s.Service.Lock(req.Resource)
		if err != nil {
			return s.errorBody(ctx, err)
		}
		return http.StatusOK, lockWire(ls)
	}
	return s.errorBody(ctx, fenceview.Errorf(fenceview.EINVALID, "op must be acquire, renew, release, fence or lock"))
}

// rpcAllowed applies the caller's role and prefixes to one request, as
// admit and pathResource do for the JSON API.
func rpcAllowed(ctx context.Context, req rpcRequest) error {
	action := auth.Lock
	switch req.Op {
	case "fence":
		action = auth.Fence
	case "lock":
		action = auth.Read
	}
	p := auth.FromContext(ctx)
	if !p.Allows(action) {
		return fenceview.Errorf(fenceview.EFORBIDDEN, "a %s key may not do this", p.Role)
	}
	return seeResource(ctx, req.Resource)
}

// rpcOut is a connection's write side. The writer goroutine sends the
// answers of requests served by workers; a request served inline
// (handleRPC) may send its own. After a failed write nothing more is sent.
type rpcOut struct {
	conn   *websocket.Conn
	mu     sync.Mutex // one writer at a time, as websocket.Conn requires
	broken bool
}

// send writes msg as one message. o.mu must be held.
func (o *rpcOut) send(msg []byte) {
	if o.broken {
		return
	}
	o.conn.SetWriteDeadline(time.Now().Add(writeWait))
	if o.conn.WriteMessage(websocket.TextMessage, msg) != nil {
		o.broken = true
		o.conn.Close() // a client that does not read is gone: stop reading its requests too
	}
}

// rpcWriter sends the answers of requests served by workers, every answer
// ready at the time as one message, and keeps the connection alive with
// pings.
func rpcWriter(out *rpcOut, answers <-chan []byte, done chan<- struct{}) {
	defer close(done)
	ping := time.NewTicker(pingPeriod)
	defer ping.Stop()
	var batch []byte
	for {
		select {
		case a, ok := <-answers:
			if !ok {
				return
			}
			// The answers of one commit come back together: let their
			// goroutines queue them, and send them as one message.
			runtime.Gosched()
			batch = wire.Batch(batch, a, answers)
			out.mu.Lock()
			out.send(batch)
			out.mu.Unlock()
		case <-ping.C:
			out.mu.Lock()
			if !out.broken {
				out.broken = out.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)) != nil
			}
			out.mu.Unlock()
		}
	}
}
